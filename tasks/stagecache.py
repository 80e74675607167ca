"""Stage outputs keyed by what they were computed from, published whole or not at all.

Every stage of the pipeline (ingest, bags, signatures, index; DESIGN.md "Orchestration
rules") writes its output through :func:`run_stage`:

    <root>/<stage>/<key>/            the published output (any files the stage writes)
    <root>/<stage>/<key>/_SUCCESS.json   the manifest, the last thing to appear
    <root>/<stage>/.tmp-<key>-<host>-<pid>-<nonce>/   work in progress

``key`` is the SHA-256 of a canonical JSON document holding the stage name, the identities
of its inputs (content digests of files, keys of upstream stages) and its parameters. So:

- re-running a finished build finds every key and does no work;
- changing only a later stage's parameters changes only that stage's key and those of the
  stages after it, so the earlier outputs are reused;
- a run that failed inside a stage left nothing under ``<key>/`` for that stage (the work
  happened in a temporary folder), so the re-run reuses every finished stage and resumes at
  the one that failed.

On a local file system the temporary folder, manifest included, is renamed into place: one
atomic step. On an object store (any other fsspec protocol) there is no atomic folder
rename, so the files are moved first and the manifest is written last; a folder without a
manifest is never treated as finished and is replaced by the next run.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import hashlib
import json
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any, NamedTuple

from simweb.tasks.storage import file_digest, filesystem, join, local_path

MANIFEST = "_SUCCESS.json"
TMP_PREFIX = ".tmp-"
# Bumped when the key recipe or the manifest layout changes, so old outputs are not misread.
CACHE_FORMAT = 1
# A temporary folder from another host is only removed once it is this old: its owner may
# still be running there, and we cannot ask that host whether the process is alive.
STALE_AFTER_SECONDS = 6 * 3600

_HOST = socket.gethostname().replace("-", "_")
#: The prefix of file content identities ("sha256:<hex>"); never a stage name.
FILE_IDENTITY = "sha256"
#: Names of stages (comma-separated) that fail on purpose once their output is written but
#: before it is published: how the resume tests, and anyone checking a deployment's
#: recovery, exercise a crash inside a late stage of a real build.
FAIL_STAGE_ENV = "SIMWEB_FAIL_STAGE"

logger = logging.getLogger("simweb.stagecache")


class InjectedFailure(RuntimeError):
    """The failure :data:`FAIL_STAGE_ENV` asked for."""


class StageOutput(NamedTuple):
    """Where a stage's output lives, its stats, and whether it was reused instead of computed."""

    path: str
    stats: dict[str, Any]
    reused: bool

    @property
    def key(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]

    @property
    def stage(self) -> str:
        return self.path.rstrip("/").rsplit("/", 2)[-2]

    @property
    def identity(self) -> str:
        """How a downstream stage names this output among its inputs."""
        return f"{self.stage}:{self.key}"


# ---------------------------------------------------------------------------------------
# Keys


def canonical_json(value: Any) -> str:
    """A stable JSON text for parameters and input identities (sorted keys, no spaces).

    Accepts frozen dataclasses, pydantic models, mappings, sequences, enums, paths and
    JSON scalars. Anything else raises, because a key computed from ``repr`` could change
    between runs and silently defeat (or worse, falsely satisfy) the cache.
    """
    return json.dumps(_plain(value, "params"), sort_keys=True, separators=(",", ":"), allow_nan=False)


def _plain(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: expected a finite number, got {value!r}")
        return value
    if isinstance(value, StageOutput):
        return value.identity
    if isinstance(value, enum.Enum):
        return _plain(value.value, where)
    if isinstance(value, PurePath):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), f"{where}.{f.name}") for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump") and callable(value.model_dump):  # a pydantic model
        return _plain(value.model_dump(mode="json"), where)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{where}: expected string keys, got {type(k).__name__} key {k!r}")
            out[k] = _plain(v, f"{where}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        items = [_plain(v, f"{where}{{}}") for v in value]
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
    raise TypeError(
        f"{where}: cannot key a {type(value).__name__}; expected a frozen dataclass, a pydantic model, "
        "a dict, a list or a JSON scalar — convert it to one of those before passing it to the stage"
    )


def stage_key(stage: str, inputs: Mapping[str, Any], params: Any = None) -> str:
    """The cache key of ``stage`` run on ``inputs`` with ``params`` (64 hex digits)."""
    _check_stage_name(stage)
    document = {
        "format": CACHE_FORMAT,
        "stage": stage,
        "inputs": _plain(inputs, "inputs"),
        "params": _plain(params, "params"),
    }
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def file_identities(urls: list[str] | tuple[str, ...]) -> list[str]:
    """Content identities of input files ("sha256:<hex>"), sorted, so that moving or renaming
    a crawl does not invalidate what was computed from it while any changed byte does."""
    return sorted(f"{FILE_IDENTITY}:{file_digest(u)}" for u in urls)


def _check_stage_name(stage: str) -> None:
    if not stage or "/" in stage or ":" in stage or stage.startswith((".", "_")) or stage == FILE_IDENTITY:
        raise ValueError(f"stage name {stage!r}: expected a plain folder name such as 'bags'")


# ---------------------------------------------------------------------------------------
# Lookup and publication


def output_path(root: str, stage: str, key: str) -> str:
    return join(root, stage, key)


def read_manifest(path: str) -> dict[str, Any] | None:
    """The manifest of a published output folder, or None when it is missing or unreadable."""
    fs, p = filesystem(join(path, MANIFEST))
    try:
        with fs.open(p, "rb") as f:
            manifest = json.loads(f.read())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return manifest if isinstance(manifest, dict) else None


def lookup(root: str, stage: str, key: str) -> str | None:
    """The output folder of ``stage`` for ``key`` if a finished one is published, else None."""
    path = output_path(root, stage, key)
    manifest = read_manifest(path)
    if manifest is None or manifest.get("stage") != stage or manifest.get("key") != key:
        return None
    return path


def run_stage(
    root: str,
    stage: str,
    inputs: Mapping[str, Any],
    params: Any,
    compute: Callable[[str], Mapping[str, Any] | None],
    *,
    log: logging.Logger | logging.LoggerAdapter | None = None,
) -> StageOutput:
    """Reuse the published output of ``stage`` for these inputs and parameters, or compute it.

    ``inputs`` names what the stage reads: upstream :class:`StageOutput` values, lists from
    :func:`file_identities`, or any other identity strings. ``params`` is a frozen dataclass,
    a pydantic model or a dict. ``compute(tmp)`` writes the stage's files under the folder
    URL ``tmp`` and returns a small JSON-able stats record (records in/out, skipped by
    reason). If it raises, nothing is published and the exception propagates.
    """
    log = log or _run_logger()
    key = stage_key(stage, inputs, params)
    final = output_path(root, stage, key)
    found = read_manifest(final)
    if found is not None and found.get("key") == key:
        log.info(
            "stage %s: reused %s (computed %s in %.1f s)",
            stage, key[:12], found.get("finished", "?"), float(found.get("seconds", 0.0)),
        )
        return StageOutput(final, dict(found.get("stats") or {}), True)

    clean_stale(root, stage)
    fs, _ = filesystem(root)
    tmp = join(root, stage, f"{TMP_PREFIX}{key[:16]}-{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    fs.makedirs(filesystem(tmp)[1], exist_ok=True)
    started = _now()
    t0 = time.perf_counter()
    log.info("stage %s: computing %s", stage, key[:12])
    try:
        stats = dict(compute(tmp) or {})
        seconds = time.perf_counter() - t0
        if stage in os.environ.get(FAIL_STAGE_ENV, "").replace(" ", "").split(","):
            raise InjectedFailure(
                f"stage {stage}: failing on purpose after computing its output, because "
                f"{FAIL_STAGE_ENV}={os.environ[FAIL_STAGE_ENV]}; unset it to let the stage finish"
            )
        manifest = {
            "format": CACHE_FORMAT,
            "stage": stage,
            "key": key,
            "inputs": _plain(inputs, "inputs"),
            "params": _plain(params, "params"),
            "stats": _plain(stats, "stats"),
            "seconds": round(seconds, 3),
            "started": started,
            "finished": _now(),
            "host": socket.gethostname(),
            "simweb_version": _library_version(),
        }
        published = _publish(tmp, final, manifest)
    except BaseException:
        _remove(tmp)
        raise
    if not published:
        log.info("stage %s: %s was published by a concurrent run meanwhile; using that", stage, key[:12])
        found = read_manifest(final) or {}
        return StageOutput(final, dict(found.get("stats") or stats), True)
    log.info("stage %s: computed %s in %.1f s: %s", stage, key[:12], seconds, _brief(stats))
    return StageOutput(final, stats, False)


def _publish(tmp: str, final: str, manifest: dict[str, Any]) -> bool:
    """Move ``tmp`` to ``final`` with its manifest; False if another run got there first."""
    text = json.dumps(manifest, sort_keys=True, indent=1).encode()
    local_tmp, local_final = local_path(tmp), local_path(final)
    if local_tmp is not None and local_final is not None:
        with open(os.path.join(local_tmp, MANIFEST), "wb") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if os.path.isdir(local_final):
            if read_manifest(final) is not None:
                _remove(tmp)
                return False
            _remove(final)  # a folder without a manifest is debris, never a result
        try:
            os.rename(local_tmp, local_final)
        except OSError:
            if read_manifest(final) is not None:
                _remove(tmp)
                return False
            raise
        return True
    fs, final_p = filesystem(final)
    if fs.exists(final_p):
        if read_manifest(final) is not None:
            _remove(tmp)
            return False
        fs.rm(final_p, recursive=True)
    fs.mv(filesystem(tmp)[1], final_p, recursive=True)
    with fs.open(f"{final_p}/{MANIFEST}", "wb") as f:
        f.write(text)
    return True


# ---------------------------------------------------------------------------------------
# House-keeping


def clean_stale(root: str, stage: str | None = None) -> list[str]:
    """Remove temporary folders left by runs that crashed; returns the URLs removed.

    A folder made on this host is stale once its process is gone; one made elsewhere once
    it is older than :data:`STALE_AFTER_SECONDS`. Folders of live runs are left alone.
    """
    fs, root_p = filesystem(root)
    stages = [stage] if stage else [
        p.rstrip("/").rsplit("/", 1)[-1] for p in _ls_dirs(fs, root_p)
    ]
    removed = []
    for name in stages:
        for p in _ls_dirs(fs, f"{root_p.rstrip('/')}/{name}"):
            base = p.rstrip("/").rsplit("/", 1)[-1]
            if base.startswith(TMP_PREFIX) and _is_stale(fs, p, base):
                url = join(root, name, base)
                _remove(url)
                removed.append(url)
    return removed


def _is_stale(fs, path: str, base: str) -> bool:
    fields = base[len(TMP_PREFIX):].split("-")
    if len(fields) == 4 and fields[1] == _HOST and fields[2].isdigit():
        return not _pid_alive(int(fields[2]))
    try:
        modified = fs.modified(path)
    except (NotImplementedError, FileNotFoundError, OSError):
        return False
    if modified.tzinfo is None:
        modified = modified.replace(tzinfo=_dt.timezone.utc)
    return (_dt.datetime.now(_dt.timezone.utc) - modified).total_seconds() > STALE_AFTER_SECONDS


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def published(root: str, stage: str) -> list[dict[str, Any]]:
    """The manifests of every finished output of ``stage``, oldest first."""
    fs, root_p = filesystem(root)
    found = []
    for p in _ls_dirs(fs, f"{root_p.rstrip('/')}/{stage}"):
        base = p.rstrip("/").rsplit("/", 1)[-1]
        if base.startswith(TMP_PREFIX):
            continue
        manifest = read_manifest(join(root, stage, base))
        if manifest is not None:
            found.append(manifest)
    return sorted(found, key=lambda m: m.get("finished", ""))


def lineage(root: str, output: StageOutput | str) -> dict[str, dict[str, Any]]:
    """The manifests of ``output`` and of every stage output it was computed from, by stage.

    Follows the ``"<stage>:<key>"`` identities among each manifest's inputs, so the published
    index can say which bags, and so which strategy, it was built with. ``output`` is a
    :class:`StageOutput` or its identity. Stages computed more than once in the chain keep
    the one nearest to ``output``.
    """
    start = output.identity if isinstance(output, StageOutput) else output
    found: dict[str, dict[str, Any]] = {}
    queue, seen = [start], set()
    while queue:
        identity = queue.pop(0)
        if identity in seen:
            continue
        seen.add(identity)
        stage, _, key = identity.partition(":")
        manifest = read_manifest(output_path(root, stage, key))
        if manifest is None:
            raise FileNotFoundError(f"{identity}: expected a finished stage output under {root}/{stage}/{key}, found none")
        found.setdefault(stage, manifest)
        queue.extend(_identities(manifest.get("inputs")))
    return found


def _identities(value: Any) -> list[str]:
    """Upstream stage identities ("<stage>:<key>", key 64 hex digits) inside a manifest's inputs."""
    if isinstance(value, str):
        stage, sep, key = value.partition(":")
        ok = sep and stage and stage != FILE_IDENTITY and len(key) == 64 and all(c in "0123456789abcdef" for c in key)
        return [value] if ok else []
    if isinstance(value, Mapping):
        return [i for v in value.values() for i in _identities(v)]
    if isinstance(value, (list, tuple)):
        return [i for v in value for i in _identities(v)]
    return []


def _ls_dirs(fs, path: str) -> list[str]:
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError:
        return []
    return [e["name"] for e in entries if e.get("type") == "directory"]


def _remove(url: str) -> None:
    fs, p = filesystem(url)
    try:
        fs.rm(p, recursive=True)
    except FileNotFoundError:
        pass


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def _library_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simweb")
    except PackageNotFoundError:
        return "unknown"


def _brief(stats: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in stats.items()) or "no stats"


def _run_logger() -> logging.Logger | logging.LoggerAdapter:
    """Prefect's run logger inside a flow or task run (so the UI shows it), else ours."""
    try:
        from prefect.exceptions import MissingContextError
        from prefect.logging import get_run_logger

        try:
            return get_run_logger()
        except MissingContextError:
            return logger
    except ImportError:
        return logger


# ---------------------------------------------------------------------------------------
# Append-only inputs: the ingestion ledger of a crawl folder
#
# Incremental ingestion (flows/ingest_new_crawl.py) cannot key a whole stage by its inputs,
# because the inputs grow. Instead the crawl folder keeps a ledger of the WARC files it has
# consumed, by content digest: a file is ingested once however often it is dropped into the
# inbox, renamed or copied, and the ledger is rewritten atomically after each batch.

LEDGER = "_ingested.json"
LOCK = "_ingest.lock"
ARCHIVE_SUFFIXES = (".warc", ".warc.gz", ".arc", ".arc.gz")  # as simweb.tasks.ingest reads
# A file that failed this many runs in a row is no longer retried until its bytes change.
MAX_ATTEMPTS = 3


@dataclasses.dataclass(frozen=True, slots=True)
class InboxFile:
    """A WARC file found in the inbox, named by the SHA-256 of its bytes."""

    url: str
    size: int
    digest: str

    @property
    def name(self) -> str:
        return self.url.rstrip("/").rsplit("/", 1)[-1]


@dataclasses.dataclass(frozen=True, slots=True)
class InboxScan:
    """What an inbox holds relative to the ledger (each list in inbox order)."""

    new: tuple[InboxFile, ...]  # never seen, or failed fewer than MAX_ATTEMPTS times
    already: tuple[InboxFile, ...]  # content already ingested
    duplicates: tuple[InboxFile, ...]  # same bytes as another file of this scan
    given_up: tuple[InboxFile, ...]  # failed MAX_ATTEMPTS times; retried once the bytes change
    unsettled: tuple[str, ...]  # modified too recently: probably still being copied in
    ignored: tuple[str, ...] = ()  # not named *.warc / *.warc.gz (hidden files are not listed)

    def summary(self) -> dict[str, int]:
        return {
            "new": len(self.new),
            "already_ingested": len(self.already),
            "duplicate_in_inbox": len(self.duplicates),
            "given_up": len(self.given_up),
            "still_being_written": len(self.unsettled),
            "not_warc": len(self.ignored),
        }


def read_ledger(crawl: str) -> dict[str, dict[str, Any]]:
    """The ledger entries of a crawl folder, by content digest (empty when none yet)."""
    url = join(crawl, LEDGER)
    fs, p = filesystem(url)
    try:
        with fs.open(p, "rb") as f:
            document = json.loads(f.read())
    except FileNotFoundError:
        return {}
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(
            f"{url}: expected the JSON ledger of ingested WARC files, found unreadable content ({err}); "
            "it is only ever replaced whole, so this file was edited by hand — restore it from a backup "
            "or delete it to re-ingest every file of the inbox"
        ) from None
    if not isinstance(document, dict) or document.get("format") != CACHE_FORMAT or not isinstance(document.get("files"), dict):
        raise ValueError(
            f"{url}: expected a ledger with format {CACHE_FORMAT} and a 'files' object, found "
            f"{str(document)[:120]!r}; delete it to re-ingest every file of the inbox"
        )
    return document["files"]


def scan_inbox(inbox: str, crawl: str, *, settle_seconds: float = 60.0) -> InboxScan:
    """List the WARC files of ``inbox`` and sort them against the ledger of ``crawl``.

    Files modified less than ``settle_seconds`` ago are left for the next run, so a file still
    being copied into the inbox is not read half-written.
    """
    fs, inbox_p = filesystem(inbox)
    if not fs.isdir(inbox_p):
        raise FileNotFoundError(
            f"inbox {inbox}: expected a folder of WARC files, found nothing there; create it and drop "
            f"*.warc / *.warc.gz files into it"
        )
    ledger = read_ledger(crawl)
    now = time.time()
    new, already, duplicates, given_up, unsettled, ignored = [], [], [], [], [], []
    seen: set[str] = set()
    for info in sorted(fs.ls(inbox_p, detail=True), key=lambda e: e["name"]):
        name = info["name"].rstrip("/").rsplit("/", 1)[-1]
        if info.get("type") != "file" or name.startswith("."):
            continue
        url = join(inbox, name)
        if not name.lower().endswith(ARCHIVE_SUFFIXES):
            ignored.append(url)
            continue
        try:
            modified = fs.modified(info["name"]).timestamp()
        except (NotImplementedError, OSError):
            modified = None
        if modified is not None and now - modified < settle_seconds:
            unsettled.append(url)
            continue
        item = InboxFile(url=url, size=int(info.get("size") or 0), digest=file_digest(url))
        entry = ledger.get(item.digest)
        if entry is not None and entry.get("status") == "ingested":
            already.append(item)
        elif item.digest in seen:
            duplicates.append(item)
        elif entry is not None and int(entry.get("attempts", 0)) >= MAX_ATTEMPTS:
            given_up.append(item)
        else:
            new.append(item)
        seen.add(item.digest)
    return InboxScan(tuple(new), tuple(already), tuple(duplicates), tuple(given_up), tuple(unsettled), tuple(ignored))


def record_ingestion(crawl: str, outcomes: list[tuple[InboxFile, Mapping[str, Any] | None, str | None]]) -> str:
    """Add ``(file, stats, error)`` outcomes to the ledger of ``crawl`` and rewrite it atomically.

    ``error`` None marks the file ingested; otherwise it is recorded as failed with the reason,
    and its attempt count grows (see :data:`MAX_ATTEMPTS`).
    """
    ledger = dict(read_ledger(crawl))
    at = _now()
    for item, stats, error in outcomes:
        previous = ledger.get(item.digest, {})
        entry = {"name": item.name, "url": item.url, "size": item.size, "at": at}
        if error is None:
            entry.update(status="ingested", indexed=False, stats=_plain(dict(stats or {}), "stats"))
        else:
            entry.update(status="failed", reason=error, attempts=int(previous.get("attempts", 0)) + 1)
        ledger[item.digest] = entry
    return _write_ledger(crawl, ledger)


def mark_indexed(crawl: str, digests: list[str] | tuple[str, ...]) -> str:
    """Record that the index now covers the ingested files ``digests`` (rewritten atomically)."""
    ledger = dict(read_ledger(crawl))
    unknown = sorted(set(digests) - set(ledger))
    if unknown:
        raise KeyError(f"{len(unknown)} digest(s) are not in the ledger of {crawl}, e.g. {unknown[0]}; "
                       "expected digests of files recorded by record_ingestion")
    for digest in digests:
        ledger[digest] = {**ledger[digest], "indexed": True}
    return _write_ledger(crawl, ledger)


def not_indexed(crawl: str) -> list[str]:
    """Digests of files ingested but not yet covered by the index (an update failed or is due)."""
    return sorted(d for d, e in read_ledger(crawl).items() if e.get("status") == "ingested" and not e.get("indexed"))


def _write_ledger(crawl: str, ledger: dict[str, dict[str, Any]]) -> str:
    from simweb.tasks.storage import write_bytes_atomic

    text = json.dumps({"format": CACHE_FORMAT, "files": ledger}, sort_keys=True, indent=1).encode()
    return write_bytes_atomic(text, join(crawl, LEDGER))


def ingested_digests(crawl: str) -> list[str]:
    """Content digests of every WARC file the crawl folder holds, sorted (its identity for caching)."""
    return sorted(d for d, e in read_ledger(crawl).items() if e.get("status") == "ingested")


class CrawlLock:
    """One ingestion at a time per crawl folder: ``<crawl>/_ingest.lock`` made exclusively.

    A lock left by a process of this host that no longer exists is taken over. On an object
    store there is no exclusive create; there the deployment's concurrency limit of one run
    is what keeps ingestions apart.
    """

    def __init__(self, crawl: str) -> None:
        self.crawl = crawl
        self._path: str | None = None

    def __enter__(self) -> "CrawlLock":
        folder = local_path(self.crawl)
        if folder is None:
            return self
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, LOCK)
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = _lock_holder(path)
                if holder is not None and holder[0] == _HOST and not _pid_alive(holder[1]):
                    os.unlink(path)  # its owner died; the ledger it may have written is whole
                    continue
                raise RuntimeError(
                    f"crawl folder {self.crawl} is being ingested by another run "
                    f"({'host %s, process %d' % holder if holder else 'unknown process'}); expected no other "
                    f"ingestion at the same time — wait for it to finish, or delete {path} if that process is gone"
                ) from None
            with os.fdopen(fd, "w") as f:
                f.write(f"{_HOST} {os.getpid()}\n")
            self._path = path
            return self
        raise RuntimeError(f"could not take the ingestion lock {path}; delete it if no ingestion is running")

    def __exit__(self, *exc) -> None:
        if self._path is not None:
            try:
                os.unlink(self._path)
            except FileNotFoundError:
                pass
            self._path = None


def _lock_holder(path: str) -> tuple[str, int] | None:
    try:
        host, pid = open(path).read().split()
        return host, int(pid)
    except (OSError, ValueError):
        return None
