"""The Python API: open an index, ask for the pages related to a URL (paper Sections 6.2, 7.2).

    >>> import simweb
    >>> index = simweb.open_index("INDEX")
    >>> for r in index.related("http://java.sun.com/", top=10):
    ...     print(r.rank, f"{r.score:.3f}", r.url, r.title)

``related`` answers from the index's estimate of the bag Jaccard (the fraction of the m
min-hash positions two pages share, Section 6.2) and, by default, re-ranks by the exact one:
the candidates are the documents estimated at least α − 2σ (σ the estimate's spread at α,
simweb.core.query.candidate_alpha), and those whose exact weighted Jaccard (Σmin/Σmax of the
stored bags, Section 4; simweb.core.rerank, over the bags the index stores as memory-mapped
arrays) is at least α are returned, best first, ties by document id. Each result's ``score``
is what it is ranked by: the exact similarity when re-ranked, else the estimate
(``similarity`` is always the estimate, ``exact`` the exact one or None).
``rerank=False`` is the paper's PROCESSQUERY (Figure 11) alone: the documents estimated at
least α, by estimate. Where the index version has its related pages computed ahead (``simweb
build`` computes them once it publishes; simweb.tasks.precomputed), a default query for at most
ten answers at α ≥ 0.15 is a look-up of the page's row, the same answer as the live query.
(On DebDocs, the estimate alone finds about 95 % of the pairs whose exact
Jaccard is ≥ α at a precision of about 0.75; re-ranked, over 99 % at precision 1 — the
evaluation report measures it for its crawl, tasks/stages/eval_index.py.) ``dedup=True`` leaves out results that nearly
duplicate the query page or a result listed before them (word shingles of the crawled pages;
the paper notes that "related pages" were often mere mirrored copies). The CLI (`simweb related`) and the HTTP API
(`simweb serve`) are thin layers over this class, so all three rank the same way.
"""
from __future__ import annotations

import copy
import math
import os
import threading
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from simweb.core.query import Matches, all_pairs, candidate_alpha, process_queries
from simweb.core.rerank import exact_scores, related_top, top_exact
from simweb.tasks import index_store as store
from simweb.tasks.precomputed import open_table

__all__ = ["Index", "Related", "UnknownURL", "open_index"]

DEFAULT_TOP = 10
DEFAULT_ALPHA = 0.15  # Section 6.2: ODP categories are at least 0.15-similar within.
SHOWN_CHARS = 200  # a URL quoted in a message is cut to this many characters


def shown(text: str, limit: int = SHOWN_CHARS) -> str:
    """``text`` as a message quotes it: whole when short, else its first ``limit`` characters and "…"."""
    return text if len(text) <= limit else text[:limit] + "…"


class UnknownURL(LookupError):
    """The URL is not a document of this index."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(url, reason)
        self.url = url
        self.reason = reason

    def __str__(self) -> str:
        return f"unknown URL {shown(self.url)!r}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Related:
    """One related page: its rank and the score it is ranked by (the exact similarity when
    re-ranked, else the estimate), its URL and metadata, the estimated similarity and the
    exact one (None unless re-ranked)."""

    rank: int
    score: float
    url: str
    title: str | None
    category: str | None
    doc_id: int
    similarity: float  # the min-hash estimate of the bag Jaccard (Section 6.2)
    exact: float | None = None  # the exact weighted Jaccard (an index of metric overlap: Σmin)
    replay: str | None = None  # where a web-archive player shows the crawled page (Index.with_replay)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _check(top: int, alpha: float) -> None:
    if isinstance(top, bool) or not isinstance(top, (int, np.integer)) or top < 1:
        raise ValueError(f"top: expected a number of results ≥ 1, got {top!r}")
    if not isinstance(alpha, (int, float)) or math.isnan(alpha) or not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: expected a similarity threshold between 0 and 1, got {alpha!r}")


class Index:
    """A published related-pages index, memory-mapped (see tasks/index_store.py for the layout).

    An instance answers from the version it opened; :meth:`refresh` switches to the version
    published since, atomically for the queries that follow. ``verify`` checks every file of a
    version against the SHA-256 its manifest records before answering from it (without it, only
    their sizes are checked); ``verify_refresh`` (default: as ``verify``) does so for the versions
    :meth:`refresh` switches to (a server's worker processes open a version their parent checked).
    """

    def __init__(self, path: str | os.PathLike[str], *, verify: bool = False,
                 crawl: str | os.PathLike[str] | None = None, verify_refresh: bool | None = None,
                 precomputed: bool = True) -> None:
        self.path = os.fspath(path)
        self.precomputed = precomputed
        """Whether queries of the default kind answer from the version's related pages computed
        ahead, where it has them whole (simweb.tasks.precomputed); else every query is live."""
        self._verify = verify
        self._v = self._open(self.path)
        self._verify = verify if verify_refresh is None else verify_refresh
        self._refreshing = threading.Lock()
        self._failed: tuple[tuple[str, Any], Exception] | None = None
        self.crawl = os.fspath(crawl) if crawl is not None else os.path.join(self.path, "crawl")
        """The ingested crawl the index was built from (default ``INDEX/crawl``, where ``simweb
        build`` keeps it); ``dedup`` reads its pages' words."""

    # ----------------------------------------------------------------- basics

    def _open(self, path: str) -> store.IndexVersion:
        # Verified outside open_version's retries, which are for versions pruned while opening.
        v = store.open_version(path)
        if self._verify:
            v.verify()
        return v

    def refresh(self) -> bool:
        """Switch to the version published since this index was opened; True if it switched.

        It switches only to a complete version that opens (and verifies, when opened with
        ``verify``). When ``CURRENT`` is missing, dangling or unreadable, or names an incomplete
        or damaged version, the error is raised (FileNotFoundError, IndexFormatError) and this
        index goes on answering from the version it has. A version that failed is not opened
        again until its manifest changes, so a damaged one is not re-read at every call.
        """
        with self._refreshing:
            target = store.resolve(self.path)
            if target == self._v.path:
                return False
            attempt = (target, _stamp(os.path.join(target, store.MANIFEST)))
            if self._failed is not None and self._failed[0] == attempt:
                raise self._failed[1].with_traceback(None)
            try:
                self._v = self._open(target)
            except Exception as e:
                self._failed = (attempt, e)
                raise
            self._failed = None
            return True

    def snapshot(self) -> Index:
        """This index fixed at the version it answers from now: a later :meth:`refresh` of this
        index leaves the snapshot's answers as they are (one request, one version)."""
        return copy.copy(self)

    @property
    def version(self) -> str:
        """The name of the version this index answers from."""
        return os.path.basename(self._v.path)

    def published(self) -> str | None:
        """The version ``CURRENT`` names now, None when there is no readable ``CURRENT``; an
        index opened from a version folder names that version."""
        if os.path.isfile(os.path.join(self.path, store.MANIFEST)):
            return self.version
        try:
            return store.current_name(self.path) or None
        except (OSError, store.IndexFormatError):
            return None

    def __len__(self) -> int:
        return self._v.n_docs

    def prepare(self) -> int:
        """Build the in-memory key directory of single queries now (else the first query builds
        it: one pass over I's keys, simweb.core.query.prepare); returns the bytes it holds."""
        from simweb.core.query import prepare

        return prepare(self._v.inverted)

    def __contains__(self, url: object) -> bool:
        try:
            self._doc(self._v, str(url))
        except UnknownURL:
            return False
        return True

    def info(self) -> dict[str, Any]:
        """What the index holds: its documents (the crawled pages and the pages only linked to),
        sizes, min-hash parameters, the filter, bytes per document."""
        v = self._v
        man = v.manifest
        n = max(v.n_docs, 1)
        files = man["files"]
        h_bytes = files[store.H_FILE]["bytes"]
        i_bytes = sum(meta["bytes"] for name, meta in files.items() if name.startswith("I."))
        table = open_table(v, verify=self._verify)
        return {
            "path": self.path,
            "version": os.path.basename(v.path),
            "created": man.get("created"),
            "documents": v.n_docs,
            "crawled_documents": v.n_crawled,
            "linked_only_documents": None if v.n_crawled is None else v.n_docs - v.n_crawled,
            "indexed_documents": man["n_indexed"],
            "buckets": man["n_buckets"],
            "postings": man["n_postings"],
            "minhash": dict(man["minhash"]),
            "metric": v.metric,
            "min_in_degree": man["min_in_degree"],
            "bytes": {"H": h_bytes, "I": i_bytes, "H_per_doc": h_bytes / n, "I_per_doc": i_bytes / n},
            "signature_stats": man.get("signature_stats", {}),
            "related_table": None if table is None else {"documents": table.n_docs, "width": table.width,
                                                         "alpha": table.alpha},
        }

    def _doc(self, v: store.IndexVersion, url: str) -> int:
        from simweb.core.urls import normalize_url, url_id

        if not isinstance(url, str) or not url.strip():
            raise UnknownURL(str(url), "expected an http(s) URL")
        norm = normalize_url(url.strip())
        if norm is None:
            raise UnknownURL(url, "not an absolute http or https URL")
        # The URL, or an alias of a document as the build resolved the crawl's aliases: two
        # look-ups in memory-mapped sorted arrays, as cheap for an unknown URL as for a known one.
        uid = url_id(norm)
        doc = v.doc_of(uid)
        if doc is None:
            doc = v.alias_of(uid)
        if doc is None:
            other = _other_scheme(norm)
            if other is not None and v.doc_of(url_id(other)) is not None:
                raise UnknownURL(url, f"not in this index, but {other} is: the crawl has the page under "
                                      f"{other.split(':', 1)[0]}; ask for {other}")
            raise UnknownURL(url, f"not among the {_pages(v)} of this index; check the address or rebuild the "
                                  "index with a crawl that links to it")
        return doc

    def doc_id(self, url: str) -> int:
        """The document id of ``url`` (raises :class:`UnknownURL`)."""
        return self._doc(self._v, url)

    def document(self, url: str) -> dict[str, Any]:
        """The document map row of ``url``: url, title, in-degree, category, number of terms, indexed.
        A URL that is an alias in the index's crawl (``…/dir`` of a crawled ``…/dir/``, a redirect)
        names its document, here and in every query."""
        v = self._v
        return v.doc_rows([self._doc(v, url)])[0]

    # ----------------------------------------------------------------- queries

    def related(self, url: str, top: int = DEFAULT_TOP, alpha: float = DEFAULT_ALPHA,
                rerank: bool = True, dedup: bool = False, replay_prefix: str | None = None) -> list[Related]:
        """The pages related to ``url``, best first, at most ``top``.

        With ``rerank`` (the default): the candidates are the documents estimated ≥ α − 2σ
        (σ = √(α(1−α)/m), the estimator's spread at α); each gets its exact weighted Jaccard, and
        those ≥ α are returned by exact similarity — for an index of a strategy compared by
        overlap (simweb.core.strategy, "Overlap"; :meth:`info`'s ``metric``), ordered by their
        exact overlap, which ``exact`` then holds. Without: PROCESSQUERY (Figure 11), the
        documents with estimated similarity ≥ α. With ``dedup``: the best max(3·top, top + 10)
        answers are filtered for near-duplicates (see :meth:`without_duplicates`), then cut to ``top``.
        With ``replay_prefix`` each result that was crawled gets its replay address (:meth:`with_replay`).
        """
        return self.related_many([url], top, alpha, rerank, dedup, replay_prefix)[url]

    def related_many(self, urls: list[str], top: int = DEFAULT_TOP, alpha: float = DEFAULT_ALPHA,
                     rerank: bool = True, dedup: bool = False,
                     replay_prefix: str | None = None) -> dict[str, list[Related]]:
        """:meth:`related` for many URLs in one batch (shared bucket look-ups); keyed by URL."""
        _check(top, alpha)
        wanted = top
        if dedup:
            top = max(3 * top, top + 10)
        v = self._v
        docs = np.array([self._doc(v, u) for u in urls], dtype=np.int64)
        m = v.params.m
        if rerank and v.metric != "overlap":
            # The answers computed ahead where they cover the request (simweb.tasks.precomputed),
            # else each query live, its smallest buckets first, as many as its answer needs.
            table = open_table(v, verify=self._verify) if self.precomputed else None
            looked_up = table is not None and table.covers(alpha, top)
            found = [(looked_up and table.answer(d, alpha, top))
                     or related_top(v.inverted, v.h, v.bag_arrays, d, alpha, top, h2=v.h2) for d in docs.tolist()]
            answers = [self._rows(v, match, exact) for match, exact in found]
        else:
            # Re-ranked by overlap, every candidate is scored exactly: none is cut by its estimate.
            cand_alpha, depth = (candidate_alpha(alpha, m), None) if rerank else (alpha, top)
            matches = process_queries(v.inverted, v.h[docs] if docs.size else np.zeros((0, m), np.uint32),
                                      cand_alpha, depth, docs, v.h)
            answers = [self._exact(v, match, alpha, top) if rerank else self._rows(v, match) for match in matches]
        out: dict[str, list[Related]] = {}
        for url, answer in zip(urls, answers):
            out[url] = answer
            if dedup:
                out[url] = self.without_duplicates(url, out[url])[:wanted]
            if replay_prefix:
                out[url] = self.with_replay(out[url], replay_prefix)
        return out

    def with_replay(self, results: list[Related], prefix: str) -> list[Related]:
        """``results`` with the address at which a web-archive player at ``prefix`` (pywb, a Wayback
        Machine: ``prefix`` + 14-digit timestamp + ``/`` + URL, or a template with ``{timestamp}``
        and ``{url}``; simweb.core.replay.replay_url) shows each page as the crawl captured it: the
        capture the index's crawl keeps for its URL. A page that was only linked to has none."""
        from simweb.core.replay import replay_url

        if not results:
            return results
        stamps = self.captures([r.url for r in results])
        return [replace(r, replay=replay_url(prefix, stamps.get(r.url), r.url)) for r in results]

    def captures(self, urls: list[str]) -> dict[str, str]:
        """The capture timestamp (14 digits, UTC) of each of ``urls`` (documents' URLs) that the
        index's crawl holds as a page, read from the crawl (:attr:`crawl`)."""
        from simweb.core.urls import url_id
        from simweb.tasks.crawl.tables import pages_of

        if not os.path.isdir(os.path.join(self.crawl, "pages")):
            raise FileNotFoundError(
                f"replay links need the pages of the crawl the index was built from, expected at {self.crawl}/pages; "
                "open the index with crawl=DIR (CLI: --crawl DIR)"
            )
        pages = pages_of(self.crawl, [url_id(u) for u in urls], ["url", "timestamp"])
        return {u: t for u, t in zip(pages.column("url").to_pylist(), pages.column("timestamp").to_pylist()) if t}

    def without_duplicates(self, url: str, results: list[Related]) -> list[Related]:
        """``results`` without the pages that nearly duplicate ``url`` or a page listed before
        them (resemblance of 10-word shingles ≥ 0.8, estimated from min-hash sketches as by
        ``simweb dedup``), ranks renumbered. Needs the index's crawl (:attr:`crawl`)."""
        from simweb.tasks.dedup import near_duplicate_filter

        if not results:
            return results
        if not os.path.isdir(os.path.join(self.crawl, "pages")):
            raise FileNotFoundError(
                f"dedup needs the pages of the crawl the index was built from, expected at {self.crawl}/pages; "
                "open the index with crawl=DIR (CLI: --crawl DIR)"
            )
        kept = near_duplicate_filter(self.crawl, [r.url for r in results], query=url).kept
        return [replace(results[i], rank=rank) for rank, i in enumerate(kept, 1)]

    def _rows(self, v: store.IndexVersion, match: Matches, exact: np.ndarray | None = None) -> list[Related]:
        rows = v.doc_rows(match.docs) if len(match) else []
        sims = match.similarities.tolist()
        scores = sims if exact is None else exact.tolist()
        return [
            Related(rank=i + 1, score=scores[i], url=row["url"], title=row["title"], category=row["category"],
                    doc_id=int(match.docs[i]), similarity=sims[i], exact=None if exact is None else scores[i])
            for i, row in enumerate(rows)
        ]

    def _exact(self, v: store.IndexVersion, match: Matches, alpha: float, top: int | None) -> list[Related]:
        """The candidates ``match`` whose exact weighted Jaccard with the query is ≥ α, re-ranked by
        it (by their exact overlap, for an index of a strategy compared by overlap), at most ``top``
        (simweb.core.rerank.top_exact)."""
        order, exact = top_exact(v.bag_arrays, match.query, match.docs, match.counts, match.m, alpha, top,
                                 by_overlap=v.metric == "overlap")
        picked = Matches(match.query, match.docs[order], match.counts[order], match.m)
        return self._rows(v, picked, exact)

    def all_pairs(self, alpha: float = DEFAULT_ALPHA, rerank: bool = True) -> list[tuple[str, str, float]]:
        """Every pair of pages found α-similar, best first: with ``rerank`` (the default) the
        candidate pairs estimated ≥ α − 2σ whose exact weighted Jaccard is ≥ α, as (url, url,
        exact similarity); without, the pairs PROCESSQUERY finds, as (url, url, estimated similarity)."""
        _check(1, alpha)
        v = self._v
        m = v.params.m
        a, b, c = all_pairs(v.inverted, v.h, candidate_alpha(alpha, m) if rerank else alpha)
        if a.size == 0:
            return []
        sims = c / m
        if rerank:
            sims = np.zeros(a.size)
            order = np.argsort(a, kind="stable")
            starts = np.flatnonzero(np.concatenate([[True], a[order][1:] != a[order][:-1]]))
            for lo, hi in zip(starts.tolist(), [*starts[1:].tolist(), a.size]):
                at = order[lo:hi]
                sims[at] = exact_scores(v.bag_arrays, int(a[at[0]]), b[at])[0]
            keep = np.lexsort((b, a, -sims))
            keep = keep[sims[keep] >= alpha - 1e-12]
            a, b, sims = a[keep], b[keep], sims[keep]
        urls = v.docs.column("url")
        ua = urls.take(a).to_pylist()
        ub = urls.take(b).to_pylist()
        return [(x, y, float(s)) for x, y, s in zip(ua, ub, sims.tolist())]

    def top_terms(self, url: str, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` heaviest terms of the page's bag (Figure 14), heaviest first, ties by term."""
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ValueError(f"k: expected a number of terms ≥ 1, got {k!r}")
        return sorted(self.bag(url).items(), key=lambda tw: (-tw[1], tw[0]))[:k]

    def readable_terms(self, url: str, k: int = 10) -> list[tuple[str, str, float]]:
        """:meth:`top_terms` with each term's readable form: (term, word, weight), the word being the
        page's most frequent word with that stem (the term itself for unstemmed terms, link ids,
        or when the index's crawl, :attr:`crawl`, is not at hand)."""
        top = self.top_terms(url, k)
        words = self._page_words(url)
        if not words:
            return [(t, t, w) for t, w in top]
        from simweb.core.text import surface_forms

        forms = surface_forms(words)
        return [(t, forms.get(t, t), w) for t, w in top]

    def _page_words(self, url: str) -> list[str]:
        if not os.path.isdir(os.path.join(self.crawl, "pages")):
            return []
        from simweb.core.urls import normalize_url, url_id
        from simweb.tasks.crawl.tables import page_words

        normal = normalize_url(url.strip())
        try:
            return page_words(self.crawl, url_id(normal)) if normal else []
        except (OSError, ValueError):  # a crawl folder changing under us: show the terms as they are
            return []

    def find(self, text: str, limit: int = 20) -> list[dict[str, Any]]:
        """Pages whose title or URL holds every word of ``text`` (case-insensitive): url, title,
        category, indexed, at most ``limit``; those matched by their title first, then shorter URLs.

        The doc map's columns are searched where they are mapped (nothing is copied)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        words = [w for w in text.casefold().split() if w]
        if not words or limit < 1:
            return []
        v = self._v
        titles, urls = v.docs.column("title"), v.docs.column("url")
        in_title = in_any = None
        for word in words:
            t = pc.fill_null(pc.match_substring(titles, word, ignore_case=True), False)
            either = pc.or_(t, pc.match_substring(urls, word, ignore_case=True))
            in_title = t if in_title is None else pc.and_(in_title, t)
            in_any = either if in_any is None else pc.and_(in_any, either)
        hits = np.flatnonzero(np.asarray(in_any.to_numpy(zero_copy_only=False), dtype=bool))
        if hits.size == 0:
            return []
        by_title = np.asarray(in_title.to_numpy(zero_copy_only=False), dtype=bool)[hits]
        lengths = np.asarray(pc.utf8_length(urls.take(pa.array(hits))).to_numpy(zero_copy_only=False))
        order = hits[np.lexsort((hits, lengths, ~by_title))][:limit]
        rows = v.doc_rows(order)
        return [{"url": r["url"], "title": r.get("title"), "category": r.get("category"),
                 "indexed": bool(r.get("indexed"))} for r in rows]

    def bag(self, url: str) -> dict[str, float]:
        """The page's weighted bag as the index stores it: term → weight (Section 6.1)."""
        v = self._v
        return v.bag(self._doc(v, url))


def _other_scheme(url: str) -> str | None:
    """``url`` with http and https swapped (the form a user may have meant), or None."""
    for a, b in (("http://", "https://"), ("https://", "http://")):
        if url.startswith(a):
            return b + url[len(a):]
    return None


def _stamp(path: str) -> tuple[int, int, int] | None:
    """What tells one writing of a file from the next: inode, size, modification time."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def _pages(v: store.IndexVersion) -> str:
    """The documents of a version as a user reads them: its crawled pages, and the pages only linked to."""
    if v.n_crawled is None:
        return f"{v.n_docs:,} pages"
    linked = v.n_docs - v.n_crawled
    return f"{v.n_crawled:,} crawled pages" + (f" (and {linked:,} pages only linked to)" if linked else "")


def open_index(path: str | os.PathLike[str], *, verify: bool = False,
               crawl: str | os.PathLike[str] | None = None, verify_refresh: bool | None = None,
               precomputed: bool = True) -> Index:
    """Open a published index folder (or one version folder) for queries; ``verify`` checks
    every file against the SHA-256 its manifest records (raises IndexFormatError naming the
    file, the digest expected and the one found), ``verify_refresh`` those of the versions
    published later that it switches to (default: as ``verify``); ``crawl`` is the ingested
    crawl it was built from when not ``INDEX/crawl``; ``precomputed=False`` answers every query
    live, even where the version has its related pages computed ahead."""
    return Index(path, verify=verify, crawl=crawl, verify_refresh=verify_refresh, precomputed=precomputed)
