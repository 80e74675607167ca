"""The JSON document of a related-pages answer: schema ``simweb.related/1``.

``simweb related --json`` (by the index or by a link measure), ``GET /api/related`` and each
answer of ``POST /api/related`` print this one shape::

    {"schema": "simweb.related/1",
     "query": "https://example.org/page",   the URL asked about, as given
     "measure": "minhash",                  how pages were compared: "minhash" (the index's
                                            estimate of bag Jaccard, paper Figure 11) or a link
                                            measure: cocitation, coupling, ecbc, simrank, …
     "version": "v-20260101T000000-ab12cd34",  the index version that answered (null: none)
     "top": 10, "alpha": 0.15,              at most top results; alpha: the least similarity
     "rerank": false, "dedup": false,       (alpha null, rerank and dedup false for a link measure)
     "results": [{"rank": 1,
                  "score": 0.42,            what the ranking is by: the exact weighted Jaccard
                                            when re-ranked, else the estimate; a link measure's score
                  "url": "…", "title": "…", "category": "…",
                  "similarity": 0.4,        the estimated bag Jaccard (null for a link measure)
                  "exact": 0.42,            the exact weighted Jaccard when re-ranked, else null
                                            (an index of metric overlap: the exact overlap Σmin)
                  "replay": "…"}]}          with a replay prefix, for a crawled page: where a
                                            web-archive player shows it as crawled; else null

Title and category come from the index's document map (null where the page has none, or for a
link measure answered without an index). No document ids: they number the pages of one index
version and change with the next. The JSON Schema, for readers in other languages, is the file
``schemas/related-1.json`` beside this module, written from the models below::

    python -c "from simweb.answers import write_json_schema; write_json_schema()"

A later, incompatible shape gets a new name (``simweb.related/2``); fields may be added to this one.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from simweb.api import Index, Related, UnknownURL

SCHEMA = "simweb.related/1"
INDEX_MEASURE = "minhash"
JSON_SCHEMA_FILE = os.path.join(os.path.dirname(__file__), "schemas", "related-1.json")


class RelatedPage(BaseModel):
    """One related page of an answer."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(ge=1, description="1 for the best")
    score: float = Field(description="what the ranking is by: exact when re-ranked, else similarity; "
                                     "a link measure's score")
    url: str
    title: str | None = Field(description="the page's title, from the index's document map")
    category: str | None = Field(description="the page's directory category, when the index was built with one")
    similarity: float | None = Field(description="estimated bag Jaccard: the fraction of the m min-hash "
                                                 "positions shared (null for a link measure)")
    exact: float | None = Field(description="exact weighted Jaccard Σmin/Σmax, when re-ranked (for an index "
                                            "built with the metric overlap: Σmin, what it is ordered by)")
    replay: str | None = Field(default=None, description="where a web-archive player (pywb, a Wayback Machine) "
                                                         "shows the page as crawled, when a replay prefix was "
                                                         "given and the page was crawled")


class RelatedAnswer(BaseModel):
    """The pages related to one URL, best first."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_name: Literal["simweb.related/1"] = Field(alias="schema", description="this shape's name and version")
    query: str = Field(description="the URL asked about, as given")
    measure: str = Field(description='"minhash" (the index) or the link measure the pages were compared by')
    version: str | None = Field(description="the index version that answered")
    top: int = Field(ge=1, description="at most this many results")
    alpha: float | None = Field(description="the least similarity of a result (null for a link measure)")
    rerank: bool = Field(description="re-ranked by exact weighted Jaccard")
    dedup: bool = Field(description="near-duplicates of the query and of earlier results left out")
    results: list[RelatedPage]


def index_answer(query: str, results: Sequence[Related], *, version: str, top: int, alpha: float,
                 rerank: bool, dedup: bool) -> dict[str, Any]:
    """The document of an answer by the index (``Index.related``)."""
    pages = [{"rank": r.rank, "score": r.score, "url": r.url, "title": r.title, "category": r.category,
              "similarity": r.similarity, "exact": r.exact, "replay": r.replay} for r in results]
    return _document(query, INDEX_MEASURE, version, top, alpha, rerank, dedup, pages)


def measure_answer(query: str, results: Sequence[Any], *, measure: str, top: int,
                   index: Index | None) -> dict[str, Any]:
    """The document of an answer by a link measure (``LinkRelated`` rows: rank, url, score),
    with titles and categories from ``index`` when there is one."""
    pages = []
    for r in results:
        row = _document_row(index, r.url)
        pages.append({"rank": r.rank, "score": r.score, "url": r.url, "title": row.get("title"),
                      "category": row.get("category"), "similarity": None, "exact": None, "replay": None})
    return _document(query, measure, index.version if index is not None else None, top, None, False, False, pages)


def _document_row(index: Index | None, url: str) -> dict[str, Any]:
    if index is None:
        return {}
    try:
        return index.document(url)
    except UnknownURL:  # a page the links know but the index does not (never crawled)
        return {}


def _document(query, measure, version, top, alpha, rerank, dedup, pages) -> dict[str, Any]:
    return {"schema": SCHEMA, "query": query, "measure": measure, "version": version, "top": top,
            "alpha": alpha, "rerank": rerank, "dedup": dedup, "results": pages}


def json_schema() -> dict[str, Any]:
    """The JSON Schema of ``simweb.related/1``, from :class:`RelatedAnswer`."""
    return RelatedAnswer.model_json_schema(by_alias=True)


def write_json_schema(path: str = JSON_SCHEMA_FILE) -> None:
    """Write :func:`json_schema` to ``path`` (the file shipped in the package)."""
    with open(path, "w") as f:
        json.dump(json_schema(), f, indent=1, ensure_ascii=False, sort_keys=True)
        f.write("\n")
