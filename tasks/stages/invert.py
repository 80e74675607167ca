"""The invert stage (paper Section 6.2): H → I, for each position j the documents sharing each
signature value, leaving low in-degree URLs out (Section 7.1). Its folder is a whole index
version (simweb.tasks.index_store, which reads it); keyed by the signatures and the in-degree filter."""
from __future__ import annotations

from typing import Any

from simweb.tasks.layout import stages_folder
from simweb.tasks.options import HERE, RunOptions, Workers
from simweb.tasks.signatures import IndexParams, write_index_version
from simweb.tasks.stagecache import StageOutput, run_stage

NAME = "invert"


def invert_stage(signed: StageOutput, params: IndexParams, out: str, options: RunOptions = RunOptions(), *,
                 on: Workers = HERE) -> StageOutput:
    """I over the signatures ``signed`` (built or reused, a reused one checked as ``options`` say)
    in the index folder ``out``'s stages, fanned out on the cluster ``on`` names: see
    simweb.tasks.signatures.write_index_version."""

    def compute(tmp: str) -> dict[str, Any]:
        return write_index_version(signed.path, tmp, min_in_degree=params.min_in_degree, fan_out=on.fan_out)

    return run_stage(stages_folder(out), NAME, {"signed": signed}, {"min_in_degree": params.min_in_degree}, compute,
                     verify=options.verify)
