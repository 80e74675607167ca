"""docs/INDEX-LAYOUT.md, written from the docstrings that define the layout, so that the two
never disagree: :mod:`simweb.tasks.layout` (what an index folder holds) and
:mod:`simweb.tasks.index_store` (the bytes of one index version, and its Parquet schemas).

    python -m simweb.tasks.layout_doc docs/INDEX-LAYOUT.md

tests/test_index_layout_doc.py fails when the file is not what this writes.
"""
from __future__ import annotations

import inspect
import sys

from simweb.tasks import index_store, layout, precomputed


def _schema_table(schema) -> str:
    rows = [f"| `{f.name}` | `{f.type}` | {'' if f.nullable else 'never null'} |" for f in schema]
    return "\n".join(["| column | type | |", "| --- | --- | --- |", *rows])


def render() -> str:
    """The markdown page."""
    folder = inspect.getdoc(layout)
    version = inspect.getdoc(index_store)
    table = inspect.getdoc(precomputed)
    return f"""# The index on disk

<!-- Written by `python -m simweb.tasks.layout_doc docs/INDEX-LAYOUT.md` from the docstrings of
tasks/layout.py, tasks/index_store.py and tasks/precomputed.py; edit those, not this file. -->

`simweb build CRAWL --out OUT` writes an index folder `OUT`. The live version is the folder
`OUT/live` points to (or the one `OUT/CURRENT` names): read `OUT/live/docs.parquet` with pandas
or DuckDB, or memory-map `OUT/live/H.u32`, without looking into `versions/`.

## The index folder (`simweb.tasks.layout`)

{folder}

## One index version (`simweb.tasks.index_store`)

{version}

### docs.parquet

{_schema_table(index_store.DOCMAP)}

### bags-<first>.parquet (each bags file)

{_schema_table(index_store.INDEX_BAGS)}

## The related pages computed ahead (`simweb.tasks.precomputed`)

{table}
"""


def main(argv: list[str]) -> int:
    text = render()
    if len(argv) > 1:
        with open(argv[1], "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
