"""The publish stage: the index folder switched to a new index version atomically, so a query
sees the old or the new index, never a mix (simweb.tasks.index_store.publish; ``OUT/versions/<name>``
and ``OUT/CURRENT``). Not cached: what it compares is the live version's manifest."""
from __future__ import annotations

from typing import Any

from simweb.tasks import index_store
from simweb.tasks.options import RunOptions
from simweb.tasks.stagecache import STAGE_RUN, StageOutput

NAME = "publish"


def live_version(out: str) -> str | None:
    """The live version folder of the index at ``out``; None when there is none (or it is unreadable)."""
    try:
        return index_store.resolve(out)
    except (FileNotFoundError, index_store.IndexFormatError):
        return None


def publish_index(version: StageOutput, out: str, verify: bool = False) -> str:
    """Switch the index at ``out`` to ``version`` atomically; returns the live version folder.

    A version whose manifest equals the live one's is not published again, so re-running a
    finished build changes nothing — unless the live copy is damaged (its files' sizes, and
    with ``verify`` their SHA-256, against its manifest): then it is published anew.
    """
    current = live_version(out)
    try:
        live = index_store.read_manifest(current) if current is not None else None
    except index_store.IndexFormatError:  # of an earlier format: the new version replaces it
        live = None
    if live is not None and live == index_store.read_manifest(version.path) \
            and not index_store.version_damage(current, digests=verify):
        return current
    return index_store.publish(version.path, out)


def publish_stage(version: StageOutput, out: str, options: RunOptions = RunOptions()) -> str:
    """:func:`publish_index` as the stage ``publish`` (a task run of its own in a flow run,
    *Reused* when the version was live already), the live copy checked as ``options`` say; the
    live version folder."""
    before = live_version(out)

    def describe(live: str) -> tuple[bool, dict[str, Any]]:
        return live == before, {"version": live, "index": out}

    def run() -> str:
        return publish_index(version, out, options.verify)

    wrap = STAGE_RUN.get()  # a task run of its own where stage runs are (simweb.flows.stage_runs)
    return run() if wrap is None else wrap(NAME, None, run, describe)
