"""Reading a published bags folder back: the folder itself (:func:`find_bags`) and the bags of
chosen URLs as a :class:`simweb.core.bag_matrix.BagMatrix` (:func:`read_bags`) — for the command line,
the evaluation and the tests; the bags stage that writes them is simweb.tasks.bags.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import scipy.sparse as sp

from simweb.core.bag_matrix import BagMatrix
from simweb.core.weighting import Weighting
from simweb.tasks import schemas
from simweb.tasks.crawl.corpus import flat_lists
from simweb.tasks.stagecache import MANIFEST, published, stage_manifest
from simweb.tasks.stages.weighting import DF_FILE
from simweb.tasks.stages.weighting import NAME as BAGS
from simweb.tasks.storage import arrow_threads, filesystem, join, parts

__all__ = ["find_bags", "read_bags"]


def find_bags(path: str) -> str:
    """The BAGS folder at ``path``: a published bags folder itself, or the only one under ``path/bags``.

    Raises FileNotFoundError naming the folders (and strategies) to choose from when there
    are none or several.
    """
    manifest = stage_manifest(path)
    if manifest is not None and manifest.get("stage") == BAGS:
        return path
    if parts(path) and manifest is None:
        return path  # a plain folder of BAGS parts
    # Bags an index build consumed once signed have no files left (the index keeps its own copy).
    found = [m for m in published(path, BAGS) if not m.get("consumed")]
    if len(found) == 1:
        return join(path, BAGS, found[0]["key"])
    if not found:
        raise FileNotFoundError(
            f"no bags under {path}: expected a folder written by `simweb bags --out {path}` "
            f"(with {BAGS}/<key>/{MANIFEST}) or a bags folder itself"
        )
    choices = "\n".join(f"  {join(path, BAGS, m['key'])}   {m.get('stats', {}).get('label', '?')}" for m in found)
    raise FileNotFoundError(f"{len(found)} bag sets under {path}; pass one of them:\n{choices}")


def read_bags(bags_dir: str, url_ids: Iterable[int] | None = None) -> BagMatrix:
    """The bags of ``url_ids`` (all when None) from a BAGS folder, as a :class:`BagMatrix`.

    URL ids without a bag are left out (check with ``url_id in matrix``). ``df`` and
    ``collection_size`` come from the stage's df table and manifest when present.
    """
    bags_dir = find_bags(bags_dir)
    files = parts(bags_dir)
    if not files:
        raise FileNotFoundError(f"no BAGS parts in {bags_dir}")
    fs, _ = filesystem(bags_dir)
    dataset = ds.dataset([filesystem(f)[1] for f in files], format="parquet", filesystem=fs, schema=schemas.BAGS)
    threads = arrow_threads(bags_dir)  # not for a remote folder (simweb.tasks.storage.arrow_threads)
    if url_ids is None:
        table = dataset.to_table(use_threads=threads)
    else:
        wanted = pa.array(sorted({int(u) for u in url_ids}), pa.uint64())
        table = dataset.to_table(filter=pc.field("url_id").isin(wanted), use_threads=threads)
    table = table.sort_by("url_id")
    ids = table.column("url_id").to_numpy()
    if ids.size > 1 and np.any(ids[1:] == ids[:-1]):
        keep = np.concatenate(([True], ids[1:] != ids[:-1]))
        table, ids = table.filter(pa.array(keep)), ids[keep]
    terms_flat, offsets = flat_lists(table.column("terms"))
    weights = pc.list_flatten(table.column("weights").combine_chunks()).to_numpy(zero_copy_only=False).astype(np.float64)
    encoded = pc.dictionary_encode(terms_flat)
    vocabulary = tuple(encoded.dictionary.to_pylist())
    csr = sp.csr_matrix((weights, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), offsets),
                        shape=(ids.size, len(vocabulary)))
    csr.sort_indices()
    manifest = stage_manifest(bags_dir) or {}
    stats = manifest.get("stats", {})
    df = np.zeros(len(vocabulary), dtype=np.int64)
    df_path = join(bags_dir, DF_FILE)
    fs_df, p_df = filesystem(df_path)
    if fs_df.exists(p_df) and vocabulary:
        df_table = pq.read_table(p_df, filesystem=fs_df)
        at = pc.index_in(encoded.dictionary, value_set=df_table.column("term"))
        df = pc.fill_null(df_table.column("df").take(at), 0).to_numpy().astype(np.int64)
    weighting = None
    if "weighting" in stats:  # Weighting.to_dict's record (bags of early versions lack normalise_to)
        weighting = Weighting.from_dict({"normalise_to": 1.0, **stats["weighting"]})
    return BagMatrix(ids.astype(np.uint64), tuple(table.column("url").to_pylist()), vocabulary, csr, df,
                     int(stats.get("collection_size", ids.size)), weighting)
