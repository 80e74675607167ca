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
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import PurePath
from typing import Any, NamedTuple

from simweb.tasks.logs import run_logger
from simweb.tasks.progress import dask_progress
from simweb.tasks.storage import file_problems, filesystem, fsync_path, identify, join, local_path, remove

MANIFEST = "_SUCCESS.json"
TMP_PREFIX = ".tmp-"
# Bumped when the key recipe or the manifest layout changes, so old outputs are not misread.
# 2: the manifest lists every file of the output with its size and SHA-256.
CACHE_FORMAT = 2
# A temporary folder from another host is only removed once it is this old: its owner may
# still be running there, and we cannot ask that host whether the process is alive.
STALE_AFTER_SECONDS = 6 * 3600

_HOST = socket.gethostname().replace("-", "_")
#: The prefix of file content identities ("sha256:<hex>"); never a stage name.
FILE_IDENTITY = "sha256"



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
    """Content identities of input files ("sha256:<hex>", :func:`simweb.tasks.storage.identify`),
    sorted, so that moving or renaming a crawl does not invalidate what was computed from it
    while any changed byte does (a remote object: any change of its ETag or size)."""
    return sorted(f"{FILE_IDENTITY}:{identify(u).digest}" for u in urls)


def _check_stage_name(stage: str) -> None:
    if not stage or "/" in stage or ":" in stage or stage.startswith((".", "_")) or stage == FILE_IDENTITY:
        raise ValueError(f"stage name {stage!r}: expected a plain folder name such as 'bags'")


# ---------------------------------------------------------------------------------------
# Lookup and publication


def output_path(root: str, stage: str, key: str) -> str:
    return join(root, stage, key)


def stage_manifest(path: str) -> dict[str, Any] | None:
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
    manifest = stage_manifest(path)
    if manifest is None or manifest.get("stage") != stage or manifest.get("key") != key:
        return None
    return path


#: How a stage's run is wrapped, when something wraps it: simweb.flows.stage_runs makes each a
#: Prefect task run of its own inside a flow run, ``wrap(stage, label, run[, describe]) -> run()``
#: (``describe(value)`` gives (reused?, figures) of a run whose value is no StageOutput). Unset,
#: a stage runs as a plain call.
STAGE_RUN: ContextVar[Callable[..., Any] | None] = ContextVar("simweb_stage_run", default=None)


def announce_reused(stage: str, output: StageOutput) -> StageOutput:
    """Report ``output`` of ``stage``, found whole without :func:`run_stage` (a caller that needs
    only its record), as a reused run of the stage wherever stage runs are shown."""
    wrap = STAGE_RUN.get()
    return output if wrap is None else wrap(stage, None, lambda: output._replace(reused=True))


def run_stage(
    root: str,
    stage: str,
    inputs: Mapping[str, Any],
    params: Any,
    compute: Callable[[str], Mapping[str, Any] | None],
    *,
    verify: bool = False,
    log: logging.Logger | logging.LoggerAdapter | None = None,
    label: str | None = None,
) -> StageOutput:
    """Reuse the published output of ``stage`` for these inputs and parameters, or compute it.

    ``inputs`` names what the stage reads: upstream :class:`StageOutput` values, lists from
    :func:`file_identities`, or any other identity strings. ``params`` is a frozen dataclass,
    a pydantic model or a dict. ``compute(tmp)`` writes the stage's files under the folder
    URL ``tmp`` and returns a small JSON-able stats record (records in/out, skipped by
    reason). If it raises, nothing is published and the exception propagates.

    What is reused is checked first (:func:`output_damage`): every file the manifest lists must be
    there with its size, and with ``verify`` also with its SHA-256. A damaged output is
    removed and computed again. ``label`` names what this run of the stage is about in its
    log lines (an evaluated strategy, say).
    """
    wrap = STAGE_RUN.get()
    if wrap is not None:
        return wrap(stage, label, lambda: run_stage(root, stage, inputs, params, compute, verify=verify, log=log,
                                                     label=label))
    log = log or run_logger("simweb.stagecache")
    named = f"{stage} ({label})" if label else stage
    key = stage_key(stage, inputs, params)
    final = output_path(root, stage, key)
    reused = _reuse(final, key, named, verify, log)
    if reused is not None:
        return reused
    clean_stale(root, stage)
    fs, _ = filesystem(root)
    tmp = join(root, stage, f"{TMP_PREFIX}{key[:16]}-{_HOST}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    fs.makedirs(filesystem(tmp)[1], exist_ok=True)
    started = _now()
    t0 = time.perf_counter()
    log.info("stage %s: computing %s", named, key[:12])
    try:
        with dask_progress(stage):
            stats = dict(compute(tmp) or {})
        seconds = time.perf_counter() - t0
        files = inventory(tmp)
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
            "files": files,
        }
        published = _publish(tmp, final, manifest)
    except BaseException:
        remove(tmp)
        raise
    if not published:
        log.info("stage %s: %s was published by a concurrent run meanwhile; using that", named, key[:12])
        found = stage_manifest(final) or {}
        return StageOutput(final, dict(found.get("stats") or stats), True)
    log.info("stage %s: computed %s in %.1f s: %s", named, key[:12], seconds, brief_stats(stats))
    return StageOutput(final, stats, False)


def find(root: str, stage: str, inputs: Mapping[str, Any], params: Any, *, verify: bool = False,
         log: logging.Logger | logging.LoggerAdapter | None = None) -> StageOutput | None:
    """The published output of ``stage`` for these inputs and parameters if it can be reused as
    :func:`run_stage` would reuse it (whole, not consumed), else None; a damaged one is removed."""
    key = stage_key(stage, inputs, params)
    return _reuse(output_path(root, stage, key), key, stage, verify, log or run_logger("simweb.stagecache"))


def recorded(root: str, stage: str, inputs: Mapping[str, Any], params: Any) -> StageOutput | None:
    """The output of ``stage`` for these inputs and parameters as its manifest records it —
    its folder and stats — whether or not its files are still there (:func:`consume`); None
    when it was never published."""
    key = stage_key(stage, inputs, params)
    path = output_path(root, stage, key)
    manifest = stage_manifest(path)
    if manifest is None or manifest.get("key") != key:
        return None
    return StageOutput(path, dict(manifest.get("stats") or {}), True)


def was_consumed(output: StageOutput) -> bool:
    """Whether ``output``'s files were deleted by :func:`consume` (its manifest says so)."""
    manifest = stage_manifest(output.path)
    return bool(manifest and manifest.get("consumed"))


def consume(output: StageOutput, log: logging.Logger | logging.LoggerAdapter | None = None) -> int:
    """Delete the files of an output that the next stage has turned wholly into its own (the
    bag fragments, once merged; the bags, once signed into an index), keeping its manifest, so its key and stats still name it in
    the lineage; returns the bytes freed. A consumed output is never reused: should the next
    stage's output be lost, :func:`run_stage` computes it anew.

    The manifest saying so is replaced first and the files deleted after, so a run stopped in
    between leaves an output that is known to be consumed, never one that looks whole.
    """
    manifest = stage_manifest(output.path)
    if manifest is None or manifest.get("consumed") or not isinstance(manifest.get("files"), Mapping):
        return 0
    files = manifest["files"]
    freed = int(sum(int(meta.get("bytes", 0)) for meta in files.values()))
    _write_manifest(output.path, {**manifest, "files": {}, "consumed": {"at": _now(), "bytes": freed}})
    fs, root = filesystem(output.path)
    for name in files:
        try:
            fs.rm(f"{root.rstrip('/')}/{name}")
        except FileNotFoundError:
            pass
    (log or run_logger("simweb.stagecache")).debug(
        "stage %s: %s consumed by the next stage; its %s of files deleted", output.stage, output.key[:12],
        _megabytes(freed))
    return freed


def _megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _write_manifest(folder: str, manifest: Mapping[str, Any]) -> None:
    """Replace a published output's manifest (atomically on a local file system)."""
    text = json.dumps(manifest, sort_keys=True, indent=1).encode()
    local = local_path(folder)
    if local is None:
        fs, p = filesystem(join(folder, MANIFEST))
        with fs.open(p, "wb") as f:
            f.write(text)
        return
    tmp = os.path.join(local, f"{MANIFEST}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(local, MANIFEST))
    fsync_path(local)


def _reuse(final: str, key: str, named: str, verify: bool,
           log: logging.Logger | logging.LoggerAdapter) -> StageOutput | None:
    """The output at ``final`` if it is whole and not consumed; a damaged or consumed one is
    removed so that it can be computed anew."""
    found = stage_manifest(final)
    if found is None or found.get("key") != key:
        return None
    if found.get("consumed"):
        log.info("stage %s: %s was consumed by the next stage; computing it again", named, key[:12])
        remove(final)
        return None
    problems = output_damage(final, found, digests=verify)
    if not problems:
        log.info(
            "stage %s: reused %s (computed %s in %.1f s)",
            named, key[:12], found.get("finished", "?"), float(found.get("seconds", 0.0)),
        )
        return StageOutput(final, dict(found.get("stats") or {}), True)
    log.warning("stage %s: the cached output %s is damaged (%s); computing it again",
                named, key[:12], "; ".join(problems[:3]) + (f"; {len(problems) - 3} more" if len(problems) > 3 else ""))
    remove(final)
    return None


def inventory(folder: str) -> dict[str, dict[str, Any]]:
    """Every file under ``folder`` (path relative to it → bytes, and SHA-256 where cheap).

    On a local file system each file is also flushed to disk (fsync), so that a published
    manifest never names data still only in the page cache; on an object store the digest
    would mean reading every object back, so only sizes are kept.
    """
    local = local_path(folder)
    files: dict[str, dict[str, Any]] = {}
    if local is not None:
        paths: list[str] = []
        for base, dirs, names in os.walk(local):
            dirs.sort()
            paths += (os.path.join(base, name) for name in sorted(names))
            fsync_path(base)
        # A few files at a time: hashing releases the GIL and flushing waits on the disk, and
        # the workers are idle while the flow's process takes stock (at a million pages, ~20,000
        # fragment files and 10 GB between the bags sub-stages).
        with ThreadPoolExecutor(max_workers=_INVENTORY_THREADS) as pool:
            digests = list(pool.map(_sha256_synced, paths))
        for path, digest in zip(paths, digests):
            files[os.path.relpath(path, local)] = {"bytes": os.path.getsize(path), "sha256": digest}
        return files
    fs, root = filesystem(folder)
    root = root.rstrip("/")
    for path, info in sorted(fs.find(root, detail=True).items()):
        files[path[len(root) + 1:]] = {"bytes": int(info.get("size") or 0)}
    return files


def output_damage(folder: str, manifest: Mapping[str, Any], *, digests: bool = False) -> list[str]:
    """What is wrong with a published output folder against its manifest's file list: files
    missing or of another size (and with ``digests``, of other content); [] when whole."""
    listed = manifest.get("files")
    if not isinstance(listed, Mapping):
        return [f"its manifest lists no files (format {manifest.get('format')!r})"]
    return file_problems(folder, listed, digests=digests,
                         differs=lambda name, *_: f"{name}: its content differs from what was written (SHA-256 mismatch)")


#: Files hashed and flushed at once by :func:`inventory`.
_INVENTORY_THREADS = 4


def _sha256_synced(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
        os.fsync(f.fileno())
    return h.hexdigest()


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
            if stage_manifest(final) is not None:
                remove(tmp)
                return False
            remove(final)  # a folder without a manifest is debris, never a result
        try:
            os.rename(local_tmp, local_final)
        except OSError:
            if stage_manifest(final) is not None:
                remove(tmp)
                return False
            raise
        fsync_path(os.path.dirname(local_final))
        return True
    fs, final_p = filesystem(final)
    if fs.exists(final_p):
        if stage_manifest(final) is not None:
            remove(tmp)
            return False
        fs.rm(final_p, recursive=True)
    _move_files(fs, filesystem(tmp)[1], final_p)
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
    stages = [stage] if stage else stage_names(root)
    removed = []
    for name in stages:
        for p in _ls_dirs(fs, f"{root_p.rstrip('/')}/{name}"):
            base = p.rstrip("/").rsplit("/", 1)[-1]
            if base.startswith(TMP_PREFIX) and _is_stale(fs, p, base):
                url = join(root, name, base)
                remove(url)
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
        manifest = stage_manifest(join(root, stage, base))
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
        manifest = stage_manifest(output_path(root, stage, key))
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


def stage_names(root: str) -> list[str]:
    """The stages that have a folder under the stage cache ``root`` (local, or on an object store), sorted."""
    fs, root_p = filesystem(root)
    return sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in _ls_dirs(fs, root_p))


def _ls_dirs(fs, path: str) -> list[str]:
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError:
        return []
    return [e["name"] for e in entries if e.get("type") == "directory"]


def _move_files(fs, src: str, dst: str) -> None:
    """Move every file under the folder ``src`` to the same place under ``dst`` on an object
    store: each file copied (inside the store), then the source folder removed. (An object store
    has no folders, so a recursive move of one is left to no library's reading of it.)"""
    src = src.rstrip("/")
    for path in sorted(fs.find(src)):
        fs.copy(path, f"{dst.rstrip('/')}/{path[len(src) + 1:]}")
    fs.rm(src, recursive=True)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def _library_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("simweb")
    except PackageNotFoundError:
        return "unknown"


def brief_stats(stats: Mapping[str, Any]) -> str:
    """A stage's stats as one readable phrase: its counts ("47 pages, 4,341 links"), the first
    always and the others when not zero; nested records (a strategy, a weighting) and timings
    are left to the manifest."""
    counts = [f"{value:,} {name.replace('_', ' ')}" for i, (name, value) in enumerate(
              (n, v) for n, v in stats.items() if isinstance(v, int) and not isinstance(v, bool) and n != "seconds")
              if value or i == 0]
    return ", ".join(counts) or "no counts"
