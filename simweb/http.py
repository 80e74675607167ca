"""The HTTP API and page: related pages and a bag's top terms over HTTP (paper Figures 13–14).

    GET  /                       HTML page: type or click a URL, see its related pages and top terms
    GET  /api/related?url=…      the answer, schema simweb.related/1 (simweb/answers.py): {"schema", "query",
                                 "measure", "version", …, "results": [{rank, url, title, category, score, …}]}
    GET  /api/related?url=…&measure=cocitation   the same by a link measure of the crawl (INDEX/crawl)
    GET  /api/related?url=…&replay_prefix=…      with each crawled result's replay address (pywb or a
                                 Wayback Machine: prefix + 14-digit timestamp + "/" + URL); the page
                                 takes it too, and `simweb serve --replay-prefix` sets it for every request
    POST /api/related            {"urls": [...], "top": 10, "alpha": 0.15, "rerank": true, "dedup": false}:
                                 a batch, {"answers": [one simweb.related/1 document per URL]}
    GET  /api/terms?url=…&k=10   the heaviest terms of the page's bag
    GET  /api/info               what the index holds, the version served, what CURRENT names now
    GET  /docs, /redoc           the OpenAPI documentation (Swagger UI, ReDoc), every file served from here
    GET  /openapi.json           the OpenAPI description

Results come from :class:`simweb.api.Index`, the same code the Python API and the CLI use.

``simweb serve`` answers from one worker process per core (``--workers``), each built by
:func:`app_from_environment`: every process maps the same index files, so their pages are in
memory once, shared, whatever the number of workers; a process's own memory is the Python
runtime and its key directory (simweb.core.query.prepare), independent of the load.

Before each request the app checks whether a newer index version was published and switches to
it when that version is complete and opens (and verifies, under ``serve --verify``); a request
is answered from one version only. When ``CURRENT`` is missing, dangling, unreadable or names an
incomplete or damaged version, the server goes on answering from the version it has, as before,
logs the cause once (not at every request; once in each worker process, which names itself) and
says so in ``/api/info`` under ``current``.

Status codes, the same on every endpoint and whatever ``CURRENT`` says:

    200  the answer
    404  the URL is not a page of the index (the message quotes at most 200 of its characters),
         or no such endpoint
    405  a method the endpoint does not take
    409  dedup or a link measure asked for, but the crawl is not at INDEX/crawl (serve --crawl)
    413  a request body over MAX_BODY (64 KiB), refused before the rest of it is read
    414  a request target (path and query) over MAX_TARGET (8 KiB)
    400  a Host header that is not one of the server's names (simweb.guard: DNS rebinding)
    422  a bad parameter: out of range, not a number, a missing url, a malformed body, a replay
         prefix that is not an http(s) URL

HEAD is answered wherever GET is, and every HTML page carries a Content-Security-Policy (simweb.guard).
    503  never: the server starts only once it has opened a version, and keeps one from then on
"""
from __future__ import annotations

import html
import json
import logging
import os
import threading
from contextlib import asynccontextmanager
from typing import Any, Literal
from urllib.parse import quote

import anyio.to_thread
from fastapi import Body, FastAPI, HTTPException, Query
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi_offline import FastAPIOffline
from pydantic import BaseModel, Field, field_validator

from simweb.answers import RelatedAnswer, index_answer, measure_answer
from simweb.api import DEFAULT_ALPHA, DEFAULT_TOP, Index, Related, UnknownURL, open_index, shown
from simweb.commands.related import RELATED_MEASURES
from simweb.core.replay import replay_prefix_problem
from simweb.guard import Guard, host_names

MAX_TOP = 1000
MAX_BATCH = 1000
MAX_BODY = 64 * 1024  # bytes: a batch of 1000 URLs of ~60 characters fits
MAX_TARGET = 8 * 1024  # bytes of path and query: an escaped URL of a few thousand characters fits

log = logging.getLogger(__name__)


class BatchRequest(BaseModel):
    urls: list[str] = Field(min_length=1, max_length=MAX_BATCH)
    top: int = Field(DEFAULT_TOP, ge=1, le=MAX_TOP)
    alpha: float = Field(DEFAULT_ALPHA, ge=0.0, le=1.0)
    rerank: bool = True
    dedup: bool = False
    replay_prefix: str | None = Field(None, max_length=2000)

    @field_validator("replay_prefix")
    @classmethod
    def _http_prefix(cls, prefix: str | None) -> str | None:
        problem = replay_prefix_problem(prefix)
        if problem:
            raise ValueError(problem)
        return prefix


class Term(BaseModel):
    term: str
    weight: float


class TermsAnswer(BaseModel):
    url: str
    terms: list[Term]


class BatchAnswer(BaseModel):
    answers: list[RelatedAnswer]


class _LinkGraph:
    """The crawl's link graph for link-measure answers: read at the first one, read again when
    the crawl changes (a part written or removed, a new selection), kept otherwise."""

    def __init__(self, crawl: str) -> None:
        self.crawl = crawl
        self._lock = threading.Lock()
        self._stamp: list[tuple[str, int, int]] | None = None
        self._graph = None

    def __call__(self):
        from simweb.tasks.crawl.graph import load_link_graph

        if not os.path.isdir(os.path.join(self.crawl, "links")):
            raise FileNotFoundError(f"a link measure needs the crawl the index was built from, expected its links "
                                    f"at {self.crawl}/links; serve with --crawl DIR (the folder written by "
                                    "`simweb ingest`)")
        with self._lock:
            stamp = self._files()
            if stamp != self._stamp:
                self._graph, self._stamp = load_link_graph(self.crawl), stamp
            return self._graph

    def _files(self) -> list[tuple[str, int, int]]:
        """Name, size and modification time of every file of the crawl folder and its data sets."""
        found = []
        for folder in (self.crawl, os.path.join(self.crawl, "pages"), os.path.join(self.crawl, "links")):
            if os.path.isdir(folder):
                found += [(e.path, e.stat().st_size, e.stat().st_mtime_ns) for e in os.scandir(folder) if e.is_file()]
        return sorted(found)


class _Live:
    """The index a server answers from: refreshed before each request, kept when that fails.

    A failed refresh is logged when its cause first appears (or changes), not at every request;
    its message, with paths relative to the index folder, is what ``/api/info`` shows.
    """

    def __init__(self, index: Index) -> None:
        self.index = index
        self.root = os.path.abspath(index.path)
        self.problem: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> Index:
        # One request refreshes at a time; the others answer from the open version meanwhile
        # rather than wait (opening a version under --verify reads all of it).
        if self._lock.acquire(blocking=False):
            try:
                self._refresh()
            finally:
                self._lock.release()
        return self.index.snapshot()

    def _refresh(self) -> None:
        try:
            switched = self.index.refresh()
        except Exception as e:  # whatever went wrong with the new version, the open one answers
            problem = self._relative(str(e))
            if problem != self.problem:
                log.warning("still serving version %s: %s", self.index.version, problem)
            self.problem = problem
        else:
            if switched or self.problem is not None:
                log.info("serving version %s", self.index.version)
            self.problem = None

    def _relative(self, message: str) -> str:
        # Paths in /api/info are relative to the index folder: no path of the machine leaves it.
        return message.replace(self.root + os.sep, "").replace(self.root, os.path.basename(self.root))

    def info(self, index: Index) -> dict[str, Any]:
        """``index.info()`` with the folder's name for its path and what ``CURRENT`` names now."""
        published = index.published()
        return {
            **index.info(),
            "path": os.path.basename(self.root),
            "current": {"version": published, "served": published == index.version, "problem": self.problem},
        }


class _RequestLimits:
    """Refuses a request target over MAX_TARGET bytes (414) and a body over MAX_BODY bytes (413).

    A declared Content-Length is judged before any of the body is read; a chunked body is
    counted as it arrives and refused at the chunk that crosses the limit, so an oversized body
    is never read whole. A refusal closes the connection (the rest of the body is not read).
    """

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        target = len(scope.get("raw_path") or scope["path"].encode()) + len(scope.get("query_string") or b"")
        if target > MAX_TARGET:
            return await _refuse(send, 414, f"request target: expected at most {MAX_TARGET} bytes of path and "
                                 f"query, got {target}; send long URLs in the body of POST /api/related")
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
            return await _refuse(send, 413, f"request body: expected at most {MAX_BODY} bytes, "
                                 f"Content-Length says {int(declared)}; split the batch")
        received, too_large, responded = 0, False, False

        async def counted():
            nonlocal received, too_large
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > MAX_BODY:
                    too_large = True
                    raise _BodyTooLarge
            return message

        async def guarded(message) -> None:
            nonlocal responded
            if too_large and not responded:
                return  # the app's answer to a cut-off body; the 413 below replaces it
            responded = responded or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not too_large:
                raise
        if too_large and not responded:
            await _refuse(send, 413, f"request body: expected at most {MAX_BODY} bytes, got more; split the batch")


class _BodyTooLarge(Exception):
    """Raised into the app when a request body crosses MAX_BODY."""


async def _refuse(send, status: int, detail: str) -> None:
    body = JSONResponse({"detail": detail}).body
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    """FastAPI's 422 detail with the offending input quoted as text of at most 200 characters."""
    errors = jsonable_encoder(exc.errors())
    for error in errors:
        given = error.pop("input", None)
        if isinstance(given, (str, int, float, bool)):
            error["input"] = shown(str(given))
    return errors


#: The environment variable through which `simweb serve` hands its worker processes their options.
SERVE_ENVIRONMENT = "SIMWEB_SERVE"


def worker_environment(index: str, crawl: str | None, verify: bool, replay_prefix: str | None,
                       hosts: frozenset[str]) -> str:
    """The value of SERVE_ENVIRONMENT for :func:`app_from_environment`: the index folder, its
    crawl, whether versions are verified, and :func:`create_app`'s replay prefix and Host names."""
    return json.dumps({"index": os.path.abspath(index), "crawl": crawl, "verify": verify,
                       "replay_prefix": replay_prefix, "hosts": sorted(hosts)})


def app_from_environment() -> FastAPI:
    """The app of one worker process of `simweb serve` (uvicorn's factory): the index its parent
    opened (and verified, under --verify: versions published later are verified here), with the
    key directory of single queries built before the first request, so none waits for it."""
    from simweb.commands.serve import log_to_stderr

    log_to_stderr(worker=True)
    options = json.loads(os.environ[SERVE_ENVIRONMENT])
    index = open_index(options["index"], crawl=options["crawl"], verify_refresh=options["verify"])
    index.prepare()
    return create_app(index, replay_prefix=options["replay_prefix"], hosts=frozenset(options["hosts"]))


#: Requests one worker process answers at once (each in a thread of its own; anyio's default is
#: 40). A query is CPU work, and every one under way holds its candidates' arrays: on the 1M-page
#: index two workers of 40 threads answered 62 related-pages requests a second with 799 MiB of
#: their own memory after the load, of 2 threads 98 with 420 MiB (of 1, 101 with 297 MiB; but
#: then a quick request waits behind a slow one).
REQUEST_THREADS = 2


@asynccontextmanager
async def _bounded_threads(_app):
    anyio.to_thread.current_default_thread_limiter().total_tokens = REQUEST_THREADS
    yield


def create_app(index: Index | str, replay_prefix: str | None = None, hosts: frozenset[str] | None = None) -> FastAPI:
    """The FastAPI application serving ``index`` (an open Index or an index folder); with
    ``replay_prefix`` every answer gives each crawled result's replay address unless the
    request names another prefix (simweb.api.Index.with_replay). It answers requests for the
    Host names ``hosts`` only (simweb.guard; default: this machine's own, 127.0.0.1, localhost
    and [::1]). Raises ValueError for a replay prefix that is not an http(s) URL."""
    if replay_prefix_problem(replay_prefix):
        raise ValueError(replay_prefix_problem(replay_prefix))
    idx = index if isinstance(index, Index) else open_index(index)
    # The documentation pages take Swagger UI and ReDoc from the fastapi-offline package, served
    # here, so that they work without a network; nor does Swagger UI send the spec to a validator.
    app = FastAPIOffline(
        title="simweb related pages",
        description="Pages related to a URL by the bag Jaccard of their anchor-window bags, via a min-hash index "
        "(Haveliwala, Gionis, Klein, Indyk, WWW 2002).",
        version="1",
        static_url="/docs-files",
        swagger_ui_parameters={"validatorUrl": None},
        lifespan=_bounded_threads,
    )
    app.state.index = idx
    replay_prefix_default = replay_prefix or None
    app.add_middleware(_RequestLimits)
    app.add_middleware(Guard, hosts=host_names() if hosts is None else hosts)  # outermost: added last
    current = _Live(idx)
    link_graph = _LinkGraph(idx.crawl)

    def unknown(e: UnknownURL) -> HTTPException:
        return HTTPException(status_code=404, detail=str(e))

    @app.get("/api/related", response_model=RelatedAnswer, summary="Pages related to a URL (Figure 11)")
    def related(
        url: str = Query(..., min_length=1, description="the page's URL"),
        top: int = Query(DEFAULT_TOP, ge=1, le=MAX_TOP, description="at most this many results"),
        alpha: float = Query(DEFAULT_ALPHA, ge=0.0, le=1.0, description="least similarity"),
        rerank: bool | None = Query(None, description="re-rank the candidates by exact weighted Jaccard, or by "
                                                      "overlap for an index of that metric (the default for the "
                                                      "index; false: the min-hash estimate alone)"),
        dedup: bool = Query(False, description="leave out near-duplicates of the query page and of earlier results"),
        measure: Literal[RELATED_MEASURES] | None = Query(  # type: ignore[valid-type]
            None, description="answer by this link measure of the crawl instead of the index (ENS paper Table 1)"),
        replay_prefix: str | None = Query(None, max_length=2000, description=_REPLAY_HELP),
    ) -> dict[str, Any]:
        if replay_prefix_problem(replay_prefix):
            raise HTTPException(status_code=422, detail=replay_prefix_problem(replay_prefix))
        index_now = current()
        try:
            if measure is not None:
                return _by_link_measure(index_now, url, measure, top, rerank is not None, dedup)
            rerank = rerank is not False
            found = index_now.related(url, top, alpha, rerank, dedup, replay_prefix or replay_prefix_default)
        except UnknownURL as e:
            raise unknown(e) from None
        except FileNotFoundError as e:
            raise HTTPException(status_code=409, detail=str(e)) from None
        return index_answer(url, found, version=index_now.version, top=top, alpha=alpha, rerank=rerank, dedup=dedup)

    def _by_link_measure(index_now: Index, url: str, measure: str, top: int, rerank: bool, dedup: bool):
        from simweb.core.urls import normalize_url
        from simweb.tasks.link_related import NotInGraph, related_by_link

        if rerank or dedup:
            raise HTTPException(status_code=422, detail="rerank and dedup apply to the index's answers, not to a "
                                                        "link measure; leave them out or leave out measure")
        if normalize_url(url.strip()) is None:
            raise unknown(UnknownURL(url, "not an absolute http or https URL"))
        try:
            found = related_by_link(link_graph(), url, measure, top=top)
        except NotInGraph:
            raise unknown(UnknownURL(url, "no link of the crawl touches it; link measures know only the pages "
                                          "that link or are linked to")) from None
        return measure_answer(url, found, measure=measure, top=top, index=index_now)

    @app.post("/api/related", response_model=BatchAnswer, summary="Pages related to each of many URLs, in one batch")
    def related_batch(req: BatchRequest = Body(...)) -> dict[str, Any]:
        index_now = current()
        try:
            found = index_now.related_many(req.urls, req.top, req.alpha, req.rerank, req.dedup,
                                           req.replay_prefix or replay_prefix_default)
        except UnknownURL as e:
            raise unknown(e) from None
        except FileNotFoundError as e:
            raise HTTPException(status_code=409, detail=str(e)) from None
        return {"answers": [index_answer(u, found[u], version=index_now.version, top=req.top, alpha=req.alpha,
                                         rerank=req.rerank, dedup=req.dedup) for u in req.urls]}

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

    @app.get("/api/info", summary="What the index holds, the version served and what CURRENT names")
    def info() -> dict[str, Any]:
        return current.info(current())

    @app.get("/", response_class=HTMLResponse, summary="The related-pages page")
    def page(
        url: str | None = Query(None, description="the page's URL, or words of its title or URL to find it by"),
        top: int = Query(DEFAULT_TOP, ge=1, le=MAX_TOP),
        alpha: float = Query(DEFAULT_ALPHA, ge=0.0, le=1.0),
        estimate: bool = Query(False, description="the min-hash estimate alone, without the exact re-rank"),
        dedup: bool = Query(False),
        replay_prefix: str | None = Query(None, max_length=2000, description=_REPLAY_HELP),
    ) -> HTMLResponse:
        rerank = not estimate
        index_now = current()
        body, status = "", 200
        if replay_prefix_problem(replay_prefix):  # never carried into a link
            body, status = f'<p class="error" id="error">{html.escape(replay_prefix_problem(replay_prefix))}</p>', 422
            url, replay_prefix = None, None
        if url and not _is_address(url):
            body = _found_html(url, index_now.find(url, FOUND_LIMIT), top, alpha, rerank, dedup, replay_prefix)
        elif url:
            try:
                results = index_now.related(url, top, alpha, rerank, dedup, replay_prefix or replay_prefix_default)
                terms_found = index_now.readable_terms(url, 10)
                doc = index_now.document(url)
                body = _results_html(url, doc, results, terms_found, top, alpha, rerank, dedup, replay_prefix)
            except UnknownURL as e:
                body, status = f'<p class="error" id="error">{html.escape(str(e))}</p>', 404
            except FileNotFoundError as e:
                body, status = f'<p class="error" id="error">{html.escape(str(e))}</p>', 409
        return HTMLResponse(_page_html(url or "", top, alpha, rerank, body, index_now.info(), dedup, replay_prefix),
                            status_code=status)

    @app.exception_handler(ValueError)
    def bad_value(_request, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": shown(str(exc), 500)})

    @app.exception_handler(RequestValidationError)
    def bad_request(_request, exc: RequestValidationError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": _validation_errors(exc)})

    return app


_STYLE = """
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
form{display:flex;gap:.5rem;flex-wrap:wrap;margin-bottom:1.5rem}
input[name=url]{flex:1;min-width:20rem;padding:.4rem}
table{border-collapse:collapse;width:100%}td,th{padding:.3rem .5rem;border-bottom:1px solid #ddd;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.error{color:#a00}.meta{color:#666;font-size:.9rem}
"""


#: Pages listed when the page is looked for by words.
FOUND_LIMIT = 20


def _is_address(text: str) -> bool:
    """Whether the search box holds a page's address (then: its related pages) rather than words."""
    return text.strip().lower().startswith(("http://", "https://"))


def _found_html(text: str, found: list[dict[str, Any]], top: int, alpha: float, rerank: bool, dedup: bool,
                replay_prefix: str | None = None) -> str:
    if not found:
        return (f'<p id="found">No page of this index has all of “{html.escape(text)}” in its title or URL. '
                "Type other words, or a page's full address (http://…).</p>")
    items = "".join(
        f'<li class="found"><a href="{html.escape(_link(f["url"], top, alpha, rerank, dedup, replay_prefix))}">'
        f'{html.escape(f["title"] or f["url"])}</a><br><span class="meta">{html.escape(f["url"])}'
        f'{" — " + html.escape(f["category"]) if f.get("category") else ""}</span></li>' for f in found)
    more = f" (the first {FOUND_LIMIT})" if len(found) >= FOUND_LIMIT else ""
    return (f'<h2>Pages matching “{html.escape(text)}”{more}</h2><p class="meta">Pick one to see its related '
            f'pages.</p><ol id="found">{items}</ol>')


_REPLAY_HELP = ("a web-archive player's address (pywb: http://host:8080/COLLECTION/, or a Wayback Machine's): "
                "each crawled result gets prefix + 14-digit timestamp + / + URL")


def _replay_html(replay: str | None) -> str:
    """The replay link of a result, when it has one."""
    if not replay:
        return ""
    return f' <a class="replay" href="{html.escape(replay)}" rel="noopener">replay</a>'


def _link(url: str, top: int, alpha: float, rerank: bool, dedup: bool = False, replay_prefix: str | None = None) -> str:
    return (f"/?url={quote(url, safe='')}&top={top}&alpha={alpha}" + ("" if rerank else "&estimate=true")
            + ("&dedup=true" if dedup else "")
            + (f"&replay_prefix={quote(replay_prefix, safe='')}" if replay_prefix else ""))


def _page_html(url: str, top: int, alpha: float, rerank: bool, body: str, info: dict[str, Any],
               dedup: bool = False, replay_prefix: str | None = None) -> str:
    # A replay prefix given in the address is kept by the form (the server's own needs none).
    kept = (f'<input type="hidden" name="replay_prefix" value="{html.escape(replay_prefix)}">'
            if replay_prefix else "")
    checked = "" if rerank else " checked"
    dedup_checked = " checked" if dedup else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>simweb — related pages</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>{_STYLE}</style></head>
<body><h1>Related pages</h1>
<form method="get" action="/">
<input name="url" type="search" placeholder="a page's address, or words of its title or URL" value="{html.escape(url)}"
 aria-label="a page's address, or words of its title or URL" required style="min-width:24rem">
<label>top <input name="top" type="number" min="1" max="{MAX_TOP}" value="{top}" style="width:4rem"></label>
<label>α <input name="alpha" type="number" min="0" max="1" step="0.01" value="{alpha}" style="width:4.5rem"></label>
<label><input name="estimate" type="checkbox" value="true"{checked}> estimate only (no exact re-rank)</label>
<label><input name="dedup" type="checkbox" value="true"{dedup_checked}> hide near-duplicates</label>
{kept}<button type="submit">Find</button></form>
{body}
<p class="meta" id="about">{_page_counts(info)}:
every page of the crawl and every page it links to has a bag and can be asked about; the
{info['indexed_documents']:,} {_indexed_rule(info.get('min_in_degree'))} can be returned as related pages
(paper Section 7.1). Signatures: m = {info['minhash']['m']} ({info['minhash']['algorithm']}).
JSON API: <a href="/docs">/docs</a>.</p>
</body></html>"""


def _page_counts(info: dict[str, Any]) -> str:
    """The index's pages as the page shows them: crawled pages, pages only linked to, indexed."""
    crawled, linked = info.get("crawled_documents"), info.get("linked_only_documents")
    if crawled is None:
        return f"{info['documents']:,} pages, {info['indexed_documents']:,} indexed"
    return (f"{crawled:,} crawled pages" + (f" and {linked:,} pages only linked to" if linked else "")
            + f", {info['indexed_documents']:,} indexed")


def _indexed_rule(min_in_degree: int | None) -> str:
    if min_in_degree is None:
        return "with a non-empty bag"
    return f"linked to by more than {min_in_degree} page{'s' if min_in_degree != 1 else ''}"


def _results_html(url: str, doc: dict[str, Any], results: list[Related], terms: list[tuple[str, str, float]],
                  top: int, alpha: float, rerank: bool, dedup: bool = False, replay_prefix: str | None = None) -> str:
    title = html.escape(doc.get("title") or "")
    rows = []
    for r in results:  # the score each is ranked by first: exact when re-ranked, else the estimate
        exact = f'<td class="num">{r.score:.3f}</td>' if rerank else ""
        rows.append(
            f'<tr class="result"><td class="num">{r.rank}</td>{exact}<td class="num">{r.similarity:.3f}</td>'
            f'<td><a href="{html.escape(_link(r.url, top, alpha, rerank, dedup, replay_prefix))}">{html.escape(r.title or r.url)}</a>'
            f'<br><span class="meta">{html.escape(r.url)}</span>{_replay_html(r.replay)}</td>'
            f'<td>{html.escape(r.category or "")}</td></tr>'
        )
    exact_head = "<th>exact</th>" if rerank else ""
    table = (
        f'<table id="related"><thead><tr><th>#</th>{exact_head}<th>estimate</th><th>page</th><th>category</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows else f'<p id="related">No page is {alpha}-similar to this one in the index.</p>'
    )
    term_items = "".join(
        f"<li>{html.escape(word)} <span class=\"meta\">{w:.4f}"
        + (f" (term {html.escape(t)})" if word != t else "") + "</span></li>" for t, word, w in terms)
    return (
        f'<h2 id="query">{title or html.escape(url)}</h2><p class="meta">{html.escape(doc["url"])}</p>'
        f"<h3>Related pages</h3>{table}"
        f'<h3>Top terms in its bag</h3><ol id="terms">{term_items}</ol>'
    )
