"""Check an index folder's files against what was recorded when they were written, and repair.

Every file simweb keeps is recorded with its size and SHA-256 when it is written: index
versions in their ``index.json`` (simweb.tasks.index_store), cached stage outputs in their
``_SUCCESS.json`` (simweb.tasks.stagecache), a version's related pages computed ahead in its
``answers.json`` (simweb.tasks.precomputed), ingest parts in their ``stats/part-*.json``
(simweb.tasks.ingest). A build checks sizes of what it reuses (cheap); :func:`audit` reads
everything and compares digests. :func:`repair` removes what is damaged so that the next
build computes it again, and re-publishes a damaged live version from its intact cached copy.
"""
from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass

from simweb.tasks import index_store, precomputed, stagecache
from simweb.tasks.crawl.parts import part_files
from simweb.tasks.layout import crawl_folder, stages_folder
from simweb.tasks.stages.publish import live_version
from simweb.tasks.storage import file_problems, filesystem, join, read_text, remove

#: Stages whose output folder holds a complete index version (under ``version/`` for an update).
VERSION_STAGES = {"invert": "", "delta-index": "version"}


@dataclass(frozen=True, slots=True)
class Damage:
    """One damaged item: what it is, where, and what is wrong with it."""

    kind: str  # "live version", "version", "related-pages table", "stage output", "ingest part"
    path: str
    problems: tuple[str, ...]

    def describe(self) -> str:
        return f"{self.kind} {self.path}: {'; '.join(self.problems)}"


def audit(out: str, *, digests: bool = True) -> tuple[list[Damage], int]:
    """Every damaged item of the index folder ``out``, and how many items were checked."""
    root = index_store.local_dir(out)
    found: list[Damage] = []
    checked = 0
    live = live_version(root)
    versions = os.path.join(root, index_store.VERSIONS)
    for name in sorted(os.listdir(versions)) if os.path.isdir(versions) else []:
        path = os.path.join(versions, name)
        if name.startswith(".tmp-") or not os.path.isdir(path):
            continue
        checked += 1
        problems = index_store.version_damage(path, digests=digests)
        if problems:
            found.append(Damage("live version" if path == live else "version", path, tuple(problems)))
        elif precomputed.table_manifest(path) is not None:  # its related pages computed ahead
            checked += 1
            problems = precomputed.table_problems(path, digests=digests)
            if problems:
                found.append(Damage("related-pages table", path, tuple(problems)))
    stages = stages_folder(root)  # local, or on an object store (simweb build --work)
    for stage in stagecache.stage_names(stages):
        for manifest in stagecache.published(stages, stage):
            path = stagecache.output_path(stages, stage, manifest["key"])
            checked += 1
            problems = stagecache.output_damage(path, manifest, digests=digests)
            if problems:
                found.append(Damage("stage output", path, tuple(problems)))
    for part, problems in _crawl_damage(crawl_folder(root), digests):
        checked += 1
        if problems:
            found.append(Damage("ingest part", part, tuple(problems)))
    return found, checked


def repair(out: str, damaged: list[Damage]) -> list[str]:
    """Remove the damaged items so that the next build computes them again; re-publish a damaged
    live version from the cached stage output it was published from, when that is intact.
    Returns one line per action taken."""
    root = index_store.local_dir(out)
    actions = []
    for item in damaged:
        if item.kind == "stage output":
            remove(item.path)
            actions.append(f"removed {item.path}: the next build computes it again")
        elif item.kind == "version":  # an earlier version, kept only for readers that hold it
            shutil.rmtree(item.path, ignore_errors=True)
            actions.append(f"removed {item.path}: an earlier version, no longer live")
        elif item.kind == "related-pages table":  # the version answers live until the next build computes it
            precomputed.remove_table(item.path)
            actions.append(f"removed the related pages computed ahead of {item.path}: the next build computes them again")
        elif item.kind == "ingest part":
            for path in _part_files(item.path):
                remove(path)
            actions.append(f"removed {item.path}: the next build reads its WARC file again")
    for item in damaged:
        if item.kind == "live version":
            source = _intact_source(root, item.path, {d.path for d in damaged})
            if source is None:
                actions.append(f"{item.path} has no intact cached copy: run the build again to publish one")
            else:
                actions.append(f"published {index_store.publish(source, root)} from {source}")
                shutil.rmtree(item.path, ignore_errors=True)  # no longer live; readers keep their open files
    return actions


def _intact_source(root: str, version: str, damaged: set[str]) -> str | None:
    """The cached stage output whose index version equals ``version``'s manifest, if intact."""
    try:
        wanted = index_store.read_manifest(version)
    except index_store.IndexFormatError:
        return None
    stages = stages_folder(root)
    for stage, sub in VERSION_STAGES.items():
        for manifest in reversed(stagecache.published(stages, stage)):
            folder = stagecache.output_path(stages, stage, manifest["key"])
            candidate = join(folder, sub) if sub else folder
            try:
                same = index_store.read_manifest(candidate) == wanted
            except index_store.IndexFormatError:
                continue
            if same and folder not in damaged and not index_store.version_damage(candidate, digests=True):
                return candidate
    return None


def _crawl_damage(crawl: str, digests: bool):
    """(part name, problems) of every ingest part whose stats file records its files."""
    fs, stats = filesystem(join(crawl, "stats"))
    try:
        names = sorted(p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(stats, detail=False))
    except (FileNotFoundError, NotADirectoryError):
        names = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        part = name[: -len(".json")]
        try:
            recorded = json.loads(read_text(join(crawl, "stats", name))).get("files")
        except (OSError, ValueError, AttributeError):
            yield join(crawl, part), [f"stats/{name} is unreadable"]
            continue
        if not isinstance(recorded, dict):
            continue  # written before parts recorded their files: nothing to compare
        yield join(crawl, part), file_problems(
            crawl, recorded, digests=digests,
            differs=lambda rel, *_, stats_file=name: f"{rel}: its content differs from the SHA-256 in stats/{stats_file}")


def _part_files(part: str) -> list[str]:
    """The stats file of a part and its pages, links and aliases files (of every piece, for a
    file read in pieces)."""
    crawl, name = part.rstrip("/").rsplit("/", 1)
    return [join(crawl, "stats", f"{name}.json"),
            *(url for data_set in ("pages", "links", "aliases") for url in part_files(crawl, name, data_set))]
