"""The weighted bags of a sample of URLs in double precision, df fitted over the whole collection:
what the evaluation compares (paper Sections 4–5), from the bags stage's fragments and merge."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import scipy.sparse as sp

from simweb.core.bag_matrix import BagMatrix
from simweb.core.strategy import Strategy
from simweb.core.weighting import Weighting
from simweb.tasks.bags.df import sum_counts
from simweb.tasks.bags.sizes import PART_MB
from simweb.tasks.bags.weigh import WEIGHED, weigh_partition
from simweb.tasks.crawl.corpus import flat_lists
from simweb.tasks.stages.bags import as_strategy
from simweb.tasks.stages.fragments import LeftOut
from simweb.tasks.stages.merge import merge_stages
from simweb.tasks.storage import parts


def sample_bags(crawl_dir: str, strategy: Strategy, out_dir: str, url_ids: np.ndarray, *,
                scheduler: Any = None, part_mb: int = PART_MB, left_out: LeftOut | None = None) -> BagMatrix:
    """The weighted bags of ``url_ids`` (those that have one) in double precision, df and NMDF
    fitted over the whole collection — what the evaluation compares (Sections 4–5).

    The fragments and merge sub-stages run (or are reused) under ``out_dir`` as for the index,
    with the pages ``left_out`` names and their out-links left out; then each merge partition
    is read once, partition by partition: its share of the bags that are not empty once
    weighted (the collection's size), and the rows of ``url_ids``, weighted exactly as
    :func:`weigh_part` weighs them before it stores float32. Memory holds a partition, the
    DF table and the sample's bags, never the collection's.
    """
    strategy = as_strategy(strategy)
    stages = merge_stages(crawl_dir, strategy, out_dir, scheduler=scheduler, part_mb=part_mb, left_out=left_out)
    df_table = sum_counts(stages.count_files())
    weighting = Weighting.resolve(strategy, df_table.column("df").to_numpy())
    wanted = pa.array(np.unique(np.asarray(url_ids, dtype=np.uint64)), pa.uint64())
    pieces, collection_size = [], 0
    for url in parts(stages.merged.path):
        weighed = weigh_partition(pq.read_table(url, read_dictionary=["url", "term"]), df_table, weighting, url)
        collection_size += int(weighed.nonempty.sum())
        pieces.append(weighed.rows(wanted))
    bags = pa.concat_tables(pieces) if pieces else WEIGHED.empty_table()
    terms_flat, offsets = flat_lists(bags.column("terms"))
    encoded = pc.dictionary_encode(terms_flat)
    vocabulary = tuple(encoded.dictionary.to_pylist())
    csr = sp.csr_matrix((pc.list_flatten(bags.column("weights")).to_numpy(zero_copy_only=False).astype(np.float64),
                         encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), offsets),
                        shape=(bags.num_rows, len(vocabulary)))
    csr.sort_indices()
    at = pc.index_in(encoded.dictionary, value_set=df_table.column("term"))
    df = df_table.column("df").take(at).to_numpy().astype(np.int64)
    return BagMatrix(bags.column("url_id").to_numpy().astype(np.uint64), tuple(bags.column("url").to_pylist()),
                     vocabulary, csr, df, collection_size, weighting)
