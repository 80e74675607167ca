"""Document frequencies of the bags stage: the collection's (term, df) from the merge partitions'
counts (:func:`sum_counts`), or a frozen epoch's (:class:`DfSnapshot`, tasks/incremental.py)."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from simweb.core.weighting import Weighting
from simweb.tasks.stagecache import (
    file_identities,
)

DF = pa.schema([pa.field("term", pa.string(), nullable=False), pa.field("df", pa.int64(), nullable=False)])


@dataclass(frozen=True, slots=True)
class DfSnapshot:
    """Document frequencies and weighting frozen at the start of an epoch (tasks/incremental.py).

    ``df_path`` is a DF table; ``weighting`` the resolved weighting of that epoch (NMDF's μ, σ
    fitted then). A term the snapshot does not know (first crawled after the epoch began)
    counts df = 1 until the next full re-weight.
    """

    df_path: str
    weighting: Weighting

    def identity(self) -> dict[str, Any]:
        return {"df": file_identities([self.df_path]), "weighting": self.weighting.to_dict()}

    def covering(self, terms: pa.Table) -> pa.Table:
        """The snapshot's DF table extended with df = 1 for the terms of ``terms`` it lacks."""
        frozen = pq.read_table(self.df_path).cast(DF)
        unknown = pc.invert(pc.is_in(terms.column("term"), value_set=frozen.column("term")))
        new = terms.filter(unknown).column("term")
        extra = pa.table({"term": new, "df": pa.array(np.ones(len(new), np.int64))}, schema=DF)
        return pa.concat_tables([frozen, extra]).sort_by("term")


def sum_counts(count_files: Sequence[str], group: int = 8) -> pa.Table:
    """The DF table of the collection (sorted by term) from the merge partitions' term counts:
    each term's counts added, ``group`` files at a time into a running total, so memory holds
    the collection's vocabulary once and a few partitions' counts."""
    total = DF.empty_table()
    for i in range(0, len(count_files), group):
        tables = [total, *(pq.read_table(f).cast(DF) for f in count_files[i:i + group])]
        summed = pa.concat_tables(tables).group_by("term", use_threads=False).aggregate([("df", "sum")])
        total = pa.table({"term": summed.column("term"), "df": summed.column("df_sum")}, schema=DF)
    return total.sort_by("term")
