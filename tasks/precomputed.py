"""The table of related pages computed ahead (simweb.core.precomputed) of a published index
version: the one module that writes and reads it.

It lives in the version's folder, beside the version's own files, and is computed after the
version is published (the index answers by live queries meanwhile):

    answers.docs.i32     n × w int32: row d, document d's related documents, best first; −1 past them
    answers.counts.u16   n × w uint16: the min-hash positions each shares with d (of H's m)
    answers.exact.f64    n × w float64: their exact weighted Jaccard
    answers.json         written last: format, the SHA-256 of the version's index.json (a table
                         answers only for the version it was computed for), n_docs, width,
                         alpha, m, each file's bytes and SHA-256, and what computing it took

While it is computed, ``.answers-work/`` in the version folder holds one file per shard of
SHARD_DOCS documents (the shard's three arrays one after the other), each written whole or not at
all: a run that stops leaves them, and the next one computes only the shards that are missing.
Two runs at once compute the same bytes, so whichever renames a file last changes nothing.
A version replaced by a newer one while its table is computed is left: its shards are skipped.

A version an incremental update made (its manifest's "updated_from", with updated.docs.u32) whose
source version is still beside it with a whole table has its table made from that one: only the
rows the update may change are computed (simweb.core.precomputed.rows_to_update, listed in
``.answers-work/rows-<source>.u32``), the others copied. The table of a version answers a query
of :class:`simweb.api.Index` when the query is the default kind (re-ranked, by Jaccard) and asks
for at most w answers at a threshold of at least the table's α; a table that is missing, of
another version or damaged (sizes; and SHA-256 when the index is opened with ``verify``) is not
used, and the queries run live.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import time
import uuid
from typing import Any

import numpy as np

from simweb.core.precomputed import AnswerTable, answer_rows, rows_to_update
from simweb.tasks import index_store as store
from simweb.tasks.options import run_calls
from simweb.tasks.storage import file_problems

#: The answers each row holds: the default query's (simweb.api.DEFAULT_TOP).
WIDTH = 10
#: The threshold the table is computed at: the default query's (simweb.api.DEFAULT_ALPHA).
ALPHA = 0.15
#: Documents in one shard: one task on a worker (at a million pages, about 9 ms a document: 40 s).
SHARD_DOCS = 4096

TABLE_MANIFEST = "answers.json"
DOCS_FILE = "answers.docs.i32"
COUNTS_FILE = "answers.counts.u16"
EXACT_FILE = "answers.exact.f64"
WORK_FOLDER = ".answers-work"
FORMAT = "simweb-answers"
FORMAT_VERSION = 1
_COLUMNS = ((DOCS_FILE, "<i4"), (COUNTS_FILE, "<u2"), (EXACT_FILE, "<f8"))
_ROW_BYTES = sum(np.dtype(dtype).itemsize for _, dtype in _COLUMNS)  # per answer: 14 bytes

#: Versions this process has opened to compute shards of (a worker computes many shards of one).
_OPENED: dict[str, tuple[str, store.IndexVersion]] = {}


def index_identity(version: str) -> str:
    """The SHA-256 of the version's index.json: the version a table belongs to."""
    return store.sha256(os.path.join(version, store.MANIFEST))


def _shard_path(version: str, first: int) -> str:
    return os.path.join(version, WORK_FOLDER, f"shard-{first:010d}.bin")


def _shard_bytes(count: int, width: int) -> int:
    return count * width * _ROW_BYTES


def _open(version: str, identity: str) -> store.IndexVersion | None:
    """The version, opened once per process; None when its index.json is no longer ``identity``."""
    try:
        if index_identity(version) != identity:
            return None
    except FileNotFoundError:  # pruned by a newer publish
        return None
    held = _OPENED.get(version)
    if held is None or held[0] != identity:
        held = _OPENED[version] = (identity, store.open_version(version))
    return held[1]


def compute_shard(version: str, identity: str, first: int, count: int, alpha: float, width: int,
                  base: str | None = None, base_identity: str | None = None, rows: str | None = None) -> dict[str, Any]:
    """The rows of documents first … first + count − 1 into their shard file; skipped (and said so)
    when the version is no longer the one of ``identity`` (replaced and pruned). With ``base`` (the
    version this one was updated from, of ``base_identity``, whose table is whole) only the rows
    the file ``rows`` names are computed, the others taken from the base's table."""
    t0 = time.perf_counter()
    for path in set(_OPENED) - {version, base}:  # a long-lived worker holds no version it no longer computes
        _OPENED.pop(path, None)
    v = _open(version, identity)
    old = None if base is None else _open(base, base_identity)
    if v is None or (base is not None and (old is None or (table := open_table(old)) is None)):
        return {"docs": 0, "skipped": count, "seconds": 0.0}
    wanted = np.arange(first, first + count)
    if base is not None:
        wanted = wanted[(wanted >= table.n_docs) | np.isin(wanted, np.fromfile(rows, dtype="<u4"))]
    computed = answer_rows(v.inverted, v.h, v.bag_arrays, wanted.tolist(), alpha, width, h2=v.h2)
    if base is None:
        docs, counts, exact = computed
    else:
        kept = np.arange(first, min(first + count, table.n_docs))
        docs, counts, exact = (np.empty((count, width), dtype=a.dtype) for a in computed)
        for out, old_rows, new_rows in zip((docs, counts, exact), (table.docs, table.counts, table.exact), computed):
            out[kept - first] = old_rows[kept]
            out[wanted - first] = new_rows
    path = _shard_path(version, first)
    tmp = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with open(tmp, "wb") as f:
            for array, (_, dtype) in zip((docs, counts, exact), _COLUMNS):
                np.ascontiguousarray(array, dtype=dtype).tofile(f)
        os.replace(tmp, path)
    except FileNotFoundError:  # the version folder was pruned meanwhile
        return {"docs": 0, "skipped": count, "seconds": round(time.perf_counter() - t0, 3)}
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return {"docs": count, "skipped": 0, "seconds": round(time.perf_counter() - t0, 3)}


def compute_table(version: str, shard_task, *, alpha: float = ALPHA, width: int = WIDTH, fan_out=None,
                  verify: bool = False, shard_docs: int | None = None) -> dict[str, Any]:
    """Compute the table of ``version`` (a published version folder) unless it has a whole one
    for ``alpha`` and ``width`` (checked by size, and with ``verify`` by content): :func:`compute_shard`
    as the Prefect task ``shard_task`` once per shard missing, through ``fan_out``
    (simweb.tasks.options.run_calls). Returns its figures: documents, shards computed
    and found, bytes, seconds, and whether it was reused, or left because a newer version replaced
    this one meanwhile."""
    t0 = time.perf_counter()
    manifest = store.read_manifest(version)
    n, m = int(manifest["n_docs"]), int(manifest["minhash"]["m"])
    if m > np.iinfo(np.uint16).max:
        raise ValueError(f"a table of answers holds counts of up to {np.iinfo(np.uint16).max} min-hashes, "
                         f"the index has m = {m}")
    if manifest.get("metric") == "overlap":  # its queries score every candidate by overlap: none is looked up
        return {"documents": n, "reused": False, "not_needed": True}
    identity = index_identity(version)
    found = table_manifest(version)
    if found is not None and found.get("alpha") == alpha and found.get("width") == width \
            and not table_problems(version, digests=verify):
        return {"documents": n, "reused": True, "bytes": _table_bytes(found), "seconds": found.get("seconds")}
    os.makedirs(os.path.join(version, WORK_FOLDER), exist_ok=True)
    shard_docs = shard_docs or SHARD_DOCS
    shards = [(first, min(shard_docs, n - first)) for first in range(0, n, shard_docs)]
    missing = [(first, count) for first, count in shards
               if not _whole(_shard_path(version, first), _shard_bytes(count, width))]
    update = _update(version, manifest, alpha, width) if missing else {}
    done = run_calls(fan_out, shard_task, [
        {"version": version, "identity": identity, "first": first, "count": count, "alpha": alpha, "width": width,
         **{k: update[k] for k in ("base", "base_identity", "rows") if k in update}}
        for first, count in missing])
    figures = {"documents": n, "answers_a_page": width, "alpha": alpha, "shards": len(shards),
               "shards_computed": len(missing), "shards_found": len(shards) - len(missing),
               **{k: v for k, v in update.items() if k.startswith("rows_")},
               "compute_seconds": round(sum(d["seconds"] for d in done), 1)}
    if any(d["skipped"] for d in done) or index_identity_or_none(version) != identity:
        return {**figures, "reused": False, "superseded": True}
    files = _join_shards(version, shards, width)
    seconds = round(time.perf_counter() - t0, 1)
    table = {"format": FORMAT, "format_version": FORMAT_VERSION, "index": identity, "n_docs": n, "width": width,
             "alpha": alpha, "m": m, "files": files, "seconds": seconds,
             "compute_seconds": figures["compute_seconds"],
             "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    tmp = os.path.join(version, f".tmp-{uuid.uuid4().hex[:8]}-{TABLE_MANIFEST}")
    with open(tmp, "w") as f:
        json.dump(table, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(version, TABLE_MANIFEST))
    shutil.rmtree(os.path.join(version, WORK_FOLDER), ignore_errors=True)
    return {**figures, "reused": False, "bytes": _table_bytes(table), "seconds": seconds}


def _update(version: str, manifest: dict[str, Any], alpha: float, width: int) -> dict[str, Any]:
    """For a version an incremental update made (its manifest's "updated_from") from a version
    whose whole table at ``alpha`` and ``width`` is still beside it: that version (``base``), and
    the rows to compute in a file (``rows``: simweb.core.precomputed.rows_to_update), with their
    figures; {} when the table is to be computed whole."""
    source = manifest.get("updated_from")
    if not source:
        return {}
    parent = os.path.dirname(os.path.abspath(version))
    for name in sorted(os.listdir(parent)):
        base = os.path.join(parent, name)
        found = table_manifest(base)
        if base == os.path.abspath(version) or found is None or found.get("index") != source \
                or found.get("alpha") != alpha or found.get("width") != width or table_problems(base):
            continue
        v, old = store.open_version(version), store.open_version(base)
        table = open_table(old)
        if table is None or v.params.to_dict() != old.params.to_dict():
            return {}
        updated = np.fromfile(os.path.join(version, store.UPDATED_DOCS_FILE), dtype="<u4").astype(np.int64)
        indexed = np.asarray(v.docs.column("indexed").to_numpy(zero_copy_only=False), dtype=bool)
        rows = rows_to_update(v.inverted, v.h, v.bag_arrays, table, updated, np.flatnonzero(~indexed))
        path = os.path.join(version, WORK_FOLDER, f"rows-{source[:16]}.u32")
        store.write_array_atomic(rows.astype(np.uint32), path)
        return {"base": base, "base_identity": source, "rows": path, "rows_computed": int(rows.size),
                "rows_kept": table.n_docs - int((rows < table.n_docs).sum())}
    return {}


def index_identity_or_none(version: str) -> str | None:
    try:
        return index_identity(version)
    except FileNotFoundError:
        return None


def _whole(path: str, size: int) -> bool:
    try:
        return os.path.getsize(path) == size
    except OSError:
        return False


def _join_shards(version: str, shards: list[tuple[int, int]], width: int) -> dict[str, dict[str, Any]]:
    """The shards' columns appended into the table's files (each whole or not at all): their sizes
    and SHA-256."""
    import hashlib

    names = [name for name, _ in _COLUMNS]
    digests = {name: hashlib.sha256() for name in names}
    with store.appending(version, names) as out:
        for first, count in shards:
            with open(_shard_path(version, first), "rb") as f:
                raw = memoryview(f.read())
            at = 0
            for name, dtype in _COLUMNS:
                size = count * width * np.dtype(dtype).itemsize
                piece = raw[at:at + size]
                out[name].write(piece)
                digests[name].update(piece)
                at += size
        for f in out.values():
            f.flush()
            os.fsync(f.fileno())
    return {name: {"bytes": os.path.getsize(os.path.join(version, name)), "sha256": digests[name].hexdigest()}
            for name in names}


def _table_bytes(table: dict[str, Any]) -> int:
    return sum(int(meta["bytes"]) for meta in table["files"].values())


def table_manifest(version: str) -> dict[str, Any] | None:
    """The version's answers.json, None when it has none (or one that cannot be read)."""
    try:
        with open(os.path.join(version, TABLE_MANIFEST)) as f:
            found = json.load(f)
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and found.get("format") == FORMAT else None


def table_problems(version: str, *, digests: bool = False) -> list[str]:
    """What keeps the version's table from answering: [] when it is whole and the version's own."""
    try:
        return _problems(version, digests)
    except (KeyError, TypeError, ValueError, AttributeError) as e:  # an answers.json of another shape
        return [f"{TABLE_MANIFEST} is not one simweb wrote ({type(e).__name__}: {e})"]


def _problems(version: str, digests: bool) -> list[str]:
    found = table_manifest(version)
    if found is None:
        return [f"no {TABLE_MANIFEST}"]
    if found.get("format_version") != FORMAT_VERSION:
        return [f"{TABLE_MANIFEST} is of format {found.get('format_version')}, not {FORMAT_VERSION}"]
    if found.get("index") != index_identity_or_none(version):
        return ["it was computed for another version of the index"]
    n, width, alpha = int(found["n_docs"]), int(found["width"]), float(found["alpha"])
    if n < 0 or width < 1 or not 0.0 <= alpha <= 1.0 or int(found["m"]) < 1:
        return [f"{TABLE_MANIFEST} names {n} rows of {width} answers at alpha {alpha}"]
    files = found["files"]
    recorded = {name: files.get(name, {}) for name, _ in _COLUMNS}
    odd = [name for name, dtype in _COLUMNS if recorded[name].get("bytes") != n * width * np.dtype(dtype).itemsize]
    if odd:
        return [f"{TABLE_MANIFEST} records sizes other than {n} rows of {width} answers for {', '.join(odd)}"]
    return file_problems(version, recorded, digests=digests,
                         differs=lambda name, *_: f"{name}: its content differs from the SHA-256 {TABLE_MANIFEST} records")


def remove_table(version: str) -> None:
    """Take the version's table away (answers.json first: what is left is no table)."""
    for name in (TABLE_MANIFEST, *(name for name, _ in _COLUMNS)):
        path = os.path.join(version, name)
        if os.path.exists(path):
            os.remove(path)
    shutil.rmtree(os.path.join(version, WORK_FOLDER), ignore_errors=True)


def _mapped(v: store.IndexVersion, found: dict[str, Any]) -> AnswerTable | None:
    n, width = int(found["n_docs"]), int(found["width"])
    if n != v.n_docs or int(found["m"]) != v.params.m:
        return None
    arrays = [np.asarray(np.memmap(os.path.join(v.path, name), dtype=dtype, mode="r", shape=(n, width)))
              if n * width else np.zeros((n, width), dtype) for name, dtype in _COLUMNS]
    return AnswerTable(*arrays, alpha=float(found["alpha"]), m=v.params.m)


def open_table(v: store.IndexVersion, *, verify: bool = False) -> AnswerTable | None:
    """The table of the opened version ``v``, memory-mapped; None when it has none that answers
    (none computed yet, computed for another version, or damaged: the queries are then live).
    Looked at again at each call: a stat of answers.json, and more only when it has changed."""
    path = os.path.join(v.path, TABLE_MANIFEST)
    try:
        st = os.stat(path)
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        stamp = None
    held = v.held.get("answers")
    if held is not None and held[0] == stamp:
        return held[1]
    table = None
    if stamp is not None and not table_problems(v.path, digests=verify):
        try:
            table = _mapped(v, table_manifest(v.path) or {})
        except (KeyError, ValueError, OSError):  # taken away or rewritten meanwhile: looked at again next time
            stamp = None
    v.held["answers"] = (stamp, table)
    return table
