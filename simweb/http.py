"""The HTTP API and page: related pages and a bag's top terms over HTTP (paper Figures 13–14).

    GET  /                       HTML page: type or click a URL, see its related pages and top terms
    GET  /api/related?url=…      {"query": …, "results": [{rank, url, similarity, title, category, …}]}
    POST /api/related            {"urls": [...], "top": 10, "alpha": 0.15, "rerank": false, "dedup": false}: a batch
    GET  /api/terms?url=…&k=10   the heaviest terms of the page's bag
    GET  /api/info               what the index holds
    GET  /docs, /openapi.json    the OpenAPI documentation

Results come from :class:`simweb.api.Index`, the same code the Python API and the CLI use. An
unknown URL is a 404 and a bad parameter a 422, each with a message saying what was expected.
Before each request the app checks whether a newer index version was published and switches to
it; a request is answered from one version only.
"""
from __future__ import annotations

import html
from typing import Any
from urllib.parse import quote

from fastapi import Body, FastAPI, HTTPException, Query
from fastapi.responses import HTMLResponse, JSONResponse
from pydantic import BaseModel, Field

from simweb.api import DEFAULT_ALPHA, DEFAULT_TOP, Index, Related, UnknownURL, open_index

MAX_TOP = 1000
MAX_BATCH = 1000


class RelatedPage(BaseModel):
    rank: int
    url: str
    similarity: float = Field(description="estimated bag Jaccard: the fraction of the m min-hash positions shared")
    title: str | None
    category: str | None
    doc_id: int
    exact: float | None = Field(None, description="exact weighted Jaccard Σmin/Σmax, when re-ranked")


class RelatedAnswer(BaseModel):
    query: str
    top: int
    alpha: float
    rerank: bool
    dedup: bool = False
    results: list[RelatedPage]


class BatchRequest(BaseModel):
    urls: list[str] = Field(min_length=1, max_length=MAX_BATCH)
    top: int = Field(DEFAULT_TOP, ge=1, le=MAX_TOP)
    alpha: float = Field(DEFAULT_ALPHA, ge=0.0, le=1.0)
    rerank: bool = False
    dedup: bool = False


class Term(BaseModel):
    term: str
    weight: float


class TermsAnswer(BaseModel):
    url: str
    terms: list[Term]


def _answer(url: str, top: int, alpha: float, rerank: bool, dedup: bool, results: list[Related]) -> dict[str, Any]:
    return {"query": url, "top": top, "alpha": alpha, "rerank": rerank, "dedup": dedup,
            "results": [r.to_dict() for r in results]}


def create_app(index: Index | str) -> FastAPI:
    """The FastAPI application serving ``index`` (an open Index or an index folder)."""
    idx = index if isinstance(index, Index) else open_index(index)
    app = FastAPI(
        title="simweb related pages",
        description="Pages related to a URL by the bag Jaccard of their anchor-window bags, via a min-hash index "
        "(Haveliwala, Gionis, Klein, Indyk, WWW 2002).",
        version="1",
    )
    app.state.index = idx

    def current() -> Index:
        idx.refresh()
        return idx

    def unknown(e: UnknownURL) -> HTTPException:
        return HTTPException(status_code=404, detail=str(e))

    @app.get("/api/related", response_model=RelatedAnswer, summary="Pages related to a URL (Figure 11)")
    def related(
        url: str = Query(..., min_length=1, description="the page's URL"),
        top: int = Query(DEFAULT_TOP, ge=1, le=MAX_TOP, description="at most this many results"),
        alpha: float = Query(DEFAULT_ALPHA, ge=0.0, le=1.0, description="least estimated similarity"),
        rerank: bool = Query(False, description="re-rank the best candidates by exact weighted Jaccard"),
        dedup: bool = Query(False, description="leave out near-duplicates of the query page and of earlier results"),
    ) -> dict[str, Any]:
        try:
            return _answer(url, top, alpha, rerank, dedup, current().related(url, top, alpha, rerank, dedup))
        except UnknownURL as e:
            raise unknown(e) from None
        except FileNotFoundError as e:
            raise HTTPException(status_code=409, detail=str(e)) from None

    @app.post("/api/related", summary="Pages related to each of many URLs, in one batch")
    def related_batch(req: BatchRequest = Body(...)) -> dict[str, Any]:
        try:
            found = current().related_many(req.urls, req.top, req.alpha, req.rerank, req.dedup)
        except UnknownURL as e:
            raise unknown(e) from None
        except FileNotFoundError as e:
            raise HTTPException(status_code=409, detail=str(e)) from None
        return {"answers": [_answer(u, req.top, req.alpha, req.rerank, req.dedup, found[u]) for u in req.urls]}

    @app.get("/api/terms", response_model=TermsAnswer, summary="The heaviest terms of a page's bag (Figure 14)")
    def terms(
        url: str = Query(..., min_length=1),
        k: int = Query(10, ge=1, le=MAX_TOP, description="how many terms"),
    ) -> dict[str, Any]:
        try:
            found = current().top_terms(url, k)
        except UnknownURL as e:
            raise unknown(e) from None
        return {"url": url, "terms": [{"term": t, "weight": w} for t, w in found]}

    @app.get("/api/info", summary="What the index holds")
    def info() -> dict[str, Any]:
        return current().info()

    @app.get("/", response_class=HTMLResponse, summary="The related-pages page")
    def page(
        url: str | None = Query(None, description="the page's URL"),
        top: int = Query(DEFAULT_TOP, ge=1, le=MAX_TOP),
        alpha: float = Query(DEFAULT_ALPHA, ge=0.0, le=1.0),
        rerank: bool = Query(False),
        dedup: bool = Query(False),
    ) -> HTMLResponse:
        index_now = current()
        body, status = "", 200
        if url:
            try:
                results = index_now.related(url, top, alpha, rerank, dedup)
                terms_found = index_now.top_terms(url, 10)
                doc = index_now.document(url)
                body = _results_html(url, doc, results, terms_found, top, alpha, rerank, dedup)
            except UnknownURL as e:
                body, status = f'<p class="error" id="error">{html.escape(str(e))}</p>', 404
            except FileNotFoundError as e:
                body, status = f'<p class="error" id="error">{html.escape(str(e))}</p>', 409
        return HTMLResponse(_page_html(url or "", top, alpha, rerank, body, index_now.info(), dedup),
                            status_code=status)

    @app.exception_handler(ValueError)
    def bad_value(_request, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    return app


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
form{display:flex;gap:.5rem;flex-wrap:wrap;margin-bottom:1.5rem}
input[name=url]{flex:1;min-width:20rem;padding:.4rem}
table{border-collapse:collapse;width:100%}td,th{padding:.3rem .5rem;border-bottom:1px solid #ddd;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.error{color:#a00}.meta{color:#666;font-size:.9rem}
"""


def _link(url: str, top: int, alpha: float, rerank: bool, dedup: bool = False) -> str:
    return (f"/?url={quote(url, safe='')}&top={top}&alpha={alpha}" + ("&rerank=true" if rerank else "")
            + ("&dedup=true" if dedup else ""))


def _page_html(url: str, top: int, alpha: float, rerank: bool, body: str, info: dict[str, Any],
               dedup: bool = False) -> str:
    checked = " checked" if rerank else ""
    dedup_checked = " checked" if dedup else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>simweb — related pages</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style></head>
<body><h1>Related pages</h1>
<form method="get" action="/">
<input name="url" type="url" placeholder="http://www.example.com/" value="{html.escape(url)}" aria-label="URL" required>
<label>top <input name="top" type="number" min="1" max="{MAX_TOP}" value="{top}" style="width:4rem"></label>
<label>α <input name="alpha" type="number" min="0" max="1" step="0.01" value="{alpha}" style="width:4.5rem"></label>
<label><input name="rerank" type="checkbox" value="true"{checked}> exact re-rank</label>
<label><input name="dedup" type="checkbox" value="true"{dedup_checked}> hide near-duplicates</label>
<button type="submit">Find</button></form>
{body}
<p class="meta">{info['documents']} pages, {info['indexed_documents']} indexed, m = {info['minhash']['m']}
({info['minhash']['algorithm']}). JSON API: <a href="/docs">/docs</a>.</p>
</body></html>"""


def _results_html(url: str, doc: dict[str, Any], results: list[Related], terms: list[tuple[str, float]],
                  top: int, alpha: float, rerank: bool, dedup: bool = False) -> str:
    title = html.escape(doc.get("title") or "")
    rows = []
    for r in results:
        exact = f'<td class="num">{r.exact:.3f}</td>' if rerank else ""
        rows.append(
            f'<tr class="result"><td class="num">{r.rank}</td><td class="num">{r.similarity:.3f}</td>{exact}'
            f'<td><a href="{html.escape(_link(r.url, top, alpha, rerank, dedup))}">{html.escape(r.title or r.url)}</a>'
            f'<br><span class="meta">{html.escape(r.url)}</span></td><td>{html.escape(r.category or "")}</td></tr>'
        )
    exact_head = "<th>exact</th>" if rerank else ""
    table = (
        f'<table id="related"><thead><tr><th>#</th><th>similarity</th>{exact_head}<th>page</th><th>category</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows else f'<p id="related">No page is {alpha}-similar to this one in the index.</p>'
    )
    term_items = "".join(f"<li>{html.escape(t)} <span class=\"meta\">{w:.4f}</span></li>" for t, w in terms)
    return (
        f'<h2 id="query">{title or html.escape(url)}</h2><p class="meta">{html.escape(doc["url"])}</p>'
        f"<h3>Related pages</h3>{table}"
        f'<h3>Top terms in its bag</h3><ol id="terms">{term_items}</ol>'
    )
