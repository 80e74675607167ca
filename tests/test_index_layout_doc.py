"""The index's on-disk layout is documented in docs/INDEX-LAYOUT.md, written from the docstrings
that define it; and a published index is readable at a stable path, OUT/live."""
from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq

from simweb.tasks import index_store
from simweb.tasks.layout_doc import render

REPO = Path(__file__).resolve().parents[1]


def test_the_layout_document_is_what_the_docstrings_say():
    written = (REPO / "docs" / "INDEX-LAYOUT.md").read_text(encoding="utf-8")
    assert written == render(), "docs/INDEX-LAYOUT.md is stale: run python -m simweb.tasks.layout_doc docs/INDEX-LAYOUT.md"
    for name in ("H.u32", "I.keys.u64", "docs.parquet", "CURRENT", "OUT/live", "OUT/crawl/"):
        assert name in written, name


def test_live_points_at_the_version_current_names_and_follows_each_publish(small_index, tmp_path):
    live = os.path.join(small_index, index_store.LIVE)
    assert os.path.islink(live) and not os.path.isabs(os.readlink(live))
    assert os.path.realpath(live) == os.path.realpath(index_store.resolve(small_index))
    assert pq.read_table(os.path.join(live, index_store.DOCMAP_FILE)).num_rows == 48
    # a second publish moves it, atomically, to the new version
    copy = tmp_path / "index"
    first = index_store.publish(index_store.resolve(small_index), str(copy))
    second = index_store.publish(first, str(copy))
    assert os.path.realpath(copy / index_store.LIVE) == os.path.realpath(second) != os.path.realpath(first)
    assert not [n for n in os.listdir(copy) if n.startswith(".tmp-")]
