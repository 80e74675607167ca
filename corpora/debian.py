"""Debian packages: fetched with apt into a cache folder, read without installing them.

A binary package (``.deb``) is an ``ar`` archive holding ``control.tar.*`` (its fields:
Package, Version, …) and ``data.tar.*`` (its files). ``Package`` decompresses the data
archive once into a temporary file, so that a package of gigabytes is listed and then read
file by file in any order with bounded memory. ``fetch_deb`` takes a package from the cache
folder or downloads it with ``apt-get download``; ``compare_debian_versions`` orders versions
as dpkg does (deb-version(7)).
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from simweb.corpora import CorpusError

__all__ = [
    "DebFile",
    "DownloadError",
    "Package",
    "compare_debian_versions",
    "deb_control",
    "default_cache",
    "fetch_deb",
    "parse_apt_candidate",
    "upstream_release",
]


class DownloadError(CorpusError):
    """apt-get could not download a package it knows about (network or mirror trouble): worth a retry."""


@dataclass(frozen=True, slots=True)
class DebFile:
    """A package in the cache, identified by its exact version and content digest."""

    package: str
    version: str
    architecture: str
    path: str
    sha256: str
    size: int
    downloaded: bool


def default_cache() -> str:
    """``$XDG_CACHE_HOME/simweb/debs`` (``~/.cache/simweb/debs`` by default)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "simweb", "debs")


# --------------------------------------------------------------------------- reading a .deb


def _ar_index(path: str) -> list[tuple[str, int, int]]:
    """The members of an ``ar`` archive: (name, offset of its bytes, size), without reading them."""
    total = os.path.getsize(path)
    members = []
    with open(path, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise CorpusError(
                f"{path} is not a Debian package (no ar archive header); delete it from the cache "
                "and run the build again to download it afresh"
            )
        while header := f.read(60):
            if len(header) < 60 or header[58:60] != b"`\n":
                raise CorpusError(f"{path} is truncated or damaged; delete it from the cache and run the build again")
            name = header[:16].decode("ascii", "replace").strip().rstrip("/")
            size = int(header[48:58].decode("ascii").strip() or 0)
            offset = f.tell()
            if offset + size > total:
                raise CorpusError(f"{path} is truncated; delete it from the cache and run the build again")
            members.append((name, offset, size))
            f.seek(size + size % 2, os.SEEK_CUR)
    return members


class _Slice(io.RawIOBase):
    """``size`` bytes of an open file from its current position, as a file of their own."""

    def __init__(self, f, size: int):
        self._f, self._left = f, size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = min(len(buffer), self._left)
        data = self._f.read(n) if n else b""
        buffer[: len(data)] = data
        self._left -= len(data)
        return len(data)


_DECOMPRESSORS = {".gz": gzip.open, ".xz": lzma.open, ".bz2": bz2.open}


def _copy_member(path: str, prefix: str, out) -> None:
    """Write the package's ``control.tar.*`` or ``data.tar.*`` member, decompressed, to ``out``."""
    for name, offset, size in _ar_index(path):
        if not name.startswith(prefix):
            continue
        suffix = name[len(prefix) :]
        if suffix == ".zst":
            # Python's tarfile has no zstd before 3.14: let dpkg-deb unpack it.
            if shutil.which("dpkg-deb") is None:
                raise CorpusError(
                    f"{path} stores {name} with zstd, which needs dpkg-deb to read; install dpkg "
                    "(apt-get install dpkg) or use a package compressed with xz or gzip"
                )
            option = "--ctrl-tarfile" if prefix == "control.tar" else "--fsys-tarfile"
            subprocess.run(["dpkg-deb", option, path], stdout=out, check=True)
            return
        if suffix and suffix not in _DECOMPRESSORS:
            raise CorpusError(f"{path} stores {name}: expected a tar archive compressed with gzip, xz, bzip2 or zstd")
        with open(path, "rb") as f:
            f.seek(offset)
            raw = io.BufferedReader(_Slice(f, size))
            stream = _DECOMPRESSORS[suffix](raw, "rb") if suffix else raw
            try:
                shutil.copyfileobj(stream, out, 1 << 20)
            except (OSError, EOFError, lzma.LZMAError) as err:
                raise CorpusError(
                    f"{path}: its {name} does not decompress ({err}); delete it from the cache and run the build again"
                ) from err
        return
    raise CorpusError(f"{path} has no {prefix} member: expected a Debian binary package")


class Package:
    """The files of a package's data archive, unpacked once to a temporary tar and read by name.

    Use as a context manager; ``files`` lists them (archive order), ``read`` gives the bytes of
    one. Memory stays bounded by the largest file, whatever the package's size.
    """

    def __init__(self, path: str):
        self.path = path
        self._spool = None
        self._tar: tarfile.TarFile | None = None

    def __enter__(self) -> "Package":
        self._spool = tempfile.TemporaryFile(prefix="simweb-deb-")
        try:
            _copy_member(self.path, "data.tar", self._spool)
            self._spool.seek(0)
            self._tar = tarfile.open(fileobj=self._spool, mode="r:")
        except BaseException:
            self._spool.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self._tar is not None:
            self._tar.close()
        self._spool.close()

    def files(self, root: str = "") -> list[tuple[str, tarfile.TarInfo]]:
        """Every non-folder entry under ``root`` (no leading slash): (path relative to it, entry)."""
        found = []
        for member in self._tar:
            name = member.name[2:] if member.name.startswith("./") else member.name.lstrip("/")
            if name.startswith(root) and not member.isdir():
                found.append((name[len(root) :], member))
        return found

    def read(self, member: tarfile.TarInfo) -> bytes | None:
        """The bytes of a regular file; None for a symbolic link or another special entry."""
        if not member.isfile():
            return None
        return self._tar.extractfile(member).read()


def deb_control(path: str) -> dict[str, str]:
    """The fields of a package's ``control`` file (Package, Version, Architecture, …)."""
    buffer = io.BytesIO()
    _copy_member(path, "control.tar", buffer)
    buffer.seek(0)
    with tarfile.open(fileobj=buffer, mode="r:") as tar:
        for member in tar:
            if member.name.lstrip("./") == "control" and member.isfile():
                text = tar.extractfile(member).read().decode("utf-8", "replace")
                break
        else:
            raise CorpusError(f"{path} has no control file: expected a Debian binary package")
    fields: dict[str, str] = {}
    for line in text.splitlines():
        match = re.match(r"([A-Za-z0-9-]+):\s*(.*)", line)
        if match:
            fields[match.group(1)] = match.group(2).strip()
    return fields


# --------------------------------------------------------------------------- the cache and apt


def _describe(path: str, package: str, downloaded: bool) -> DebFile:
    control = deb_control(path)
    if control.get("Package") != package:
        raise CorpusError(
            f"{path} holds package {control.get('Package')!r}, expected {package!r}; remove it from the cache"
        )
    with open(path, "rb") as f:
        digest = hashlib.file_digest(f, "sha256").hexdigest()
    return DebFile(
        package=package,
        version=control.get("Version", ""),
        architecture=control.get("Architecture", ""),
        path=str(Path(path).resolve()),
        sha256=digest,
        size=os.path.getsize(path),
        downloaded=downloaded,
    )


def parse_apt_candidate(policy_output: str) -> str | None:
    """The ``Candidate:`` of ``apt-cache policy`` output; None for "(none)" or an unknown package."""
    match = re.search(r"^\s*Candidate:\s*(\S+)", policy_output, re.M)
    if match is None or match.group(1) == "(none)":
        return None
    return match.group(1)


def _apt_candidate(package: str) -> str | None:
    """The version ``apt-get download`` would fetch (None: no candidate)."""
    result = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True)
    return parse_apt_candidate(result.stdout)


def _run_apt_update() -> None:
    result = subprocess.run(["apt-get", "update"], capture_output=True, text=True)
    if result.returncode != 0:
        raise DownloadError(
            "`apt-get update` failed, so the package lists stay empty: "
            + (result.stderr.strip().splitlines() or ["no message"])[-1]
            + "; check the network access to the Debian mirror and run `apt-get update` by hand"
        )


def _cached(folder: Path, package: str) -> DebFile | None:
    """The newest cached version of ``package``, or None."""
    cached = [p for p in folder.glob(f"{package}_*.deb") if p.is_file()]
    if not cached:
        return None
    described = [_describe(str(p), package, False) for p in sorted(cached)]
    newest = described[0]
    for deb in described[1:]:
        if compare_debian_versions(deb.version, newest.version) > 0:
            newest = deb
    return newest


def fetch_deb(package: str, cache: str | None = None, *, update_lists: bool | None = None) -> DebFile:
    """The package's ``.deb`` from the cache folder, downloading it with apt-get when missing.

    A cached file is reused as it is (delete it to fetch a newer version); with several cached
    versions the newest is used. Without a cached file: ``apt-cache policy`` must show a
    candidate; when it shows none the package lists are refreshed with ``apt-get update`` if
    ``update_lists`` (default: when this process runs as root), otherwise the error names the
    command to run.
    """
    if update_lists is None:
        update_lists = os.geteuid() == 0
    folder = Path(cache or default_cache()).expanduser()
    folder.mkdir(parents=True, exist_ok=True)
    cached = _cached(folder, package)
    if cached is not None:
        return cached
    for tool in ("apt-get", "apt-cache"):
        if shutil.which(tool) is None:
            raise CorpusError(
                f"{tool} not found: the corpus is built from the Debian package {package}, downloaded with apt; "
                f"run the build on Debian or Ubuntu, or copy {package}_*.deb (from `apt-get download {package}` "
                f"on such a machine) into the cache folder {folder}"
            )
    candidate = _apt_candidate(package)
    if candidate is None and update_lists:
        _run_apt_update()
        candidate = _apt_candidate(package)
    elif candidate is None:
        raise CorpusError(
            f"apt knows no version of {package} (`apt-cache policy {package}` shows no candidate): the package "
            "lists are empty or out of date; run `sudo apt-get update` (as root) and build again"
        )
    if candidate is None:
        raise CorpusError(
            f"package {package} is not available from the configured apt sources (`apt-cache policy {package}` "
            "shows no candidate after `apt-get update`); add a Debian release that ships it (DebDocs needs "
            "Debian 12 bookworm, main) to /etc/apt/sources.list(.d), or copy the .deb into the cache folder "
            f"{folder}"
        )
    staging = Path(tempfile.mkdtemp(prefix=".tmp-download-", dir=folder))
    try:
        result = subprocess.run(
            ["apt-get", "download", f"{package}={candidate}"], cwd=staging, capture_output=True, text=True
        )
        downloaded = sorted(staging.glob("*.deb"))
        if result.returncode != 0 or len(downloaded) != 1:
            lines = [ln for ln in result.stderr.splitlines() if ln.startswith("E:")] or result.stderr.splitlines()
            raise DownloadError(
                f"`apt-get download {package}={candidate}` failed: {lines[-1] if lines else 'no message'}; "
                "check the network access to the Debian mirror (or run `apt-get update`) and build again"
            )
        target = folder / downloaded[0].name
        os.replace(downloaded[0], target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return _describe(str(target), package, True)


# --------------------------------------------------------------------------- versions


def upstream_release(version: str, parts: int = 2) -> str:
    """The upstream ``major.minor`` of a Debian version: ``"3:3.2.25-0+deb12u7"`` → ``"3.2"``.

    ``parts`` numbers are kept: 3 gives ``"3.2.25"``; a version with fewer gives what it has.
    """
    upstream = version.split(":", 1)[-1].rsplit("-", 1)[0]
    numbers = re.match(r"\d+(?:\.\d+)*", upstream)
    if not numbers:
        raise ValueError(f"expected a Debian version with a numeric upstream part, got {version!r}")
    return ".".join(numbers.group().split(".")[:parts])


def _order(char: str) -> int:
    if char == "~":
        return -1
    if char.isdigit():
        return 0
    if char.isalpha():
        return ord(char)
    return ord(char) + 256


def _compare_part(a: str, b: str) -> int:
    """dpkg's comparison of an upstream version or revision (deb-version(7))."""
    i = j = 0
    while i < len(a) or j < len(b):
        first_diff = 0
        while (i < len(a) and not a[i].isdigit()) or (j < len(b) and not b[j].isdigit()):
            ac = _order(a[i]) if i < len(a) and not a[i].isdigit() else 0
            bc = _order(b[j]) if j < len(b) and not b[j].isdigit() else 0
            if ac != bc:
                return -1 if ac < bc else 1
            i += 1
            j += 1
        while i < len(a) and a[i] == "0":
            i += 1
        while j < len(b) and b[j] == "0":
            j += 1
        while i < len(a) and a[i].isdigit() and j < len(b) and b[j].isdigit():
            if not first_diff:
                first_diff = (a[i] > b[j]) - (a[i] < b[j])
            i += 1
            j += 1
        if i < len(a) and a[i].isdigit():
            return 1
        if j < len(b) and b[j].isdigit():
            return -1
        if first_diff:
            return first_diff
    return 0


def compare_debian_versions(a: str, b: str) -> int:
    """-1, 0 or 1 as Debian version ``a`` sorts before, equal to or after ``b`` (deb-version(7))."""

    def split(v: str) -> tuple[int, str, str]:
        epoch, _, rest = v.partition(":") if ":" in v else ("0", "", v)
        upstream, _, revision = rest.rpartition("-") if "-" in rest else (rest, "", "0")
        return int(epoch or 0), upstream, revision

    ea, ua, ra = split(a)
    eb, ub, rb = split(b)
    if ea != eb:
        return -1 if ea < eb else 1
    return _compare_part(ua, ub) or _compare_part(ra, rb)
