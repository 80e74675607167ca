"""A build of the shared WARC fixtures in this process, killed with SIGKILL at a chosen point.

Run by tests/test_faults.py as ``python tests/fault_build.py OUT [KILL_POINT]``; without a kill
point it builds to the end (the related pages computed ahead included) and prints the live version folder. Kill points:

    ingest            inside the ingest, once the first file's parts are written, before they are published
    <stage>:inside    inside a stage, once its output is written, before it is published
    <stage>:after     at the boundary after a stage is published, before the next begins
    publish           inside the publication of the index version, before CURRENT is switched

(<stage>: bag-fragments, bag-merge, bags, signatures, invert.) The process kills itself, so
nothing of Python's clean-up runs: what is left on disk is what a crash leaves.
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WARCS = sorted((REPO.parent / "shared" / "fixtures" / "warc").glob("*.warc*"))


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str) -> None:
    """Make the build kill this process at ``point``."""
    from simweb.tasks import index_store, stagecache
    from simweb.tasks.ingest import parts as ingest_parts

    if point == "ingest":
        def publish_then_die(self):
            self.flush()
            _die()

        ingest_parts.IngestParts.publish = publish_then_die
        return
    if point == "publish":
        copy = index_store.copy_file
        copied = []

        def copy_then_die(src, dst, sha=None):
            copy(src, dst, sha)
            if "/versions/" in dst:
                copied.append(dst)
                if len(copied) == 3:
                    _die()

        index_store.copy_file = copy_then_die
        return
    stage, _, when = point.partition(":")
    run_stage = stagecache.run_stage

    def run_stage_and_die(root, name, inputs, params, compute, **kwargs):
        if name == stage and when == "inside":
            def compute_then_die(tmp):
                compute(tmp)
                _die()
            return run_stage(root, name, inputs, params, compute_then_die, **kwargs)
        output = run_stage(root, name, inputs, params, compute, **kwargs)
        if name == stage and when == "after":
            _die()
        return output

    stagecache.run_stage = run_stage_and_die
    # The stages imported run_stage by name: point them at the armed one too.
    import simweb.tasks.stages.bags as bags
    import simweb.tasks.stages.dedup as dedup
    import simweb.tasks.stages.invert as invert
    import simweb.tasks.stages.merge as merge
    import simweb.tasks.stages.signatures as signatures

    bags.run_stage = merge.run_stage = dedup.run_stage = invert.run_stage = signatures.run_stage = run_stage_and_die


def build(out: str) -> str:
    from simweb.core.strategy import Strategy
    from simweb.flows.chain import index_chain
    from simweb.tasks.ingest.files import ingest_files
    from simweb.tasks.layout import IndexLock, crawl_folder, sweep_debris
    from simweb.tasks.signatures import IndexParams
    from simweb.tasks.stages.related_table import related_table_stage

    with IndexLock(out, "fault test build"):
        sweep_debris(out)
        ingest_files([str(p) for p in WARCS], crawl_folder(out))
        live = index_chain(None, crawl_folder(out), out, Strategy(), IndexParams(m=16, min_in_degree=0)).index
        related_table_stage(live)
        return live


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    if len(sys.argv) > 2:
        arm(sys.argv[2])
    print(build(sys.argv[1]))
