"""How much two ingested crawls overlap, and their relative size: the lecture notes' capture–recapture
estimate (``papers/lecture-web-size-duplicates-pagerank.md``, "Random queries [Bhar98a]").

A seeded sample of each crawl's pages is drawn; each sampled page is looked for in the other
crawl as a near-duplicate — shingles and min-hash sketches exactly as ``simweb dedup`` makes
them (:func:`simweb.tasks.dedup.page_fingerprints`, :class:`DedupParams`), every page of the
other crawl sketched and searched by banding (:func:`simweb.core.shingles.near_duplicates_in`).
The fractions found, their intervals and the size ratio they imply are
:mod:`simweb.core.overlap`.

Both crawls are read by :func:`simweb.tasks.crawl.tables.unique_pages`: a URL crawled twice counts
once. Pages without words are neither sampled nor matched (they are counted): the fractions are
of each crawl's pages with text.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from simweb.core.overlap import OverlapEstimate, estimate_overlap, sample_rows
from simweb.core.shingles import Sketches, near_duplicates_in, sketch
from simweb.tasks.crawl.tables import unique_pages
from simweb.tasks.dedup import DedupParams, page_fingerprints


@dataclass(frozen=True, slots=True)
class OverlapParams:
    """Pages sampled from each crawl (Bharat and Broder sampled 20,000 URLs per engine), the
    seed of the samples, the confidence level of the intervals, and the near-duplicate test:
    shingle size, resemblance threshold and sketch, as ``simweb dedup`` has them."""

    sample: int = 1000
    seed: int = 0
    confidence: float = 0.95
    dedup: DedupParams = field(default_factory=DedupParams)

    def __post_init__(self) -> None:
        if self.sample < 1:
            raise ValueError(f"expected a sample of 1 or more pages, got {self.sample}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"expected a confidence level in (0, 1), such as 0.95, got {self.confidence}")


class NoPagesToCompare(ValueError):
    """A crawl has no page with words: there is nothing to sample."""


@dataclass(frozen=True, slots=True, eq=False)
class SketchedCrawl:
    """A crawl's pages with text, their sketches, and what was left out."""

    crawl: str
    urls: list[str]
    sketches: Sketches
    repeated_urls: int
    without_words: int


@dataclass(frozen=True, slots=True, eq=False)
class CrawlSample:
    """A crawl's side of the estimate: its sampled pages and, for each, the URL of its most
    resembling near-duplicate in the other crawl (None: none) and their estimated resemblance."""

    crawl: SketchedCrawl
    urls: list[str]
    matches: list[str | None]
    resemblance: np.ndarray

    @property
    def found(self) -> int:
        return sum(m is not None for m in self.matches)


@dataclass(frozen=True, slots=True, eq=False)
class OverlapReport:
    """What :func:`estimate_crawl_overlap` found for crawls A and B."""

    a: CrawlSample
    b: CrawlSample
    estimate: OverlapEstimate
    params: OverlapParams
    seconds: float

    def to_json(self) -> dict:
        """The report as JSON values; an unbounded or undefined ratio bound is null."""
        e, d = self.estimate, self.params.dedup
        return {
            "params": {"sample": self.params.sample, "seed": self.params.seed, "confidence": self.params.confidence,
                       "k": d.k, "threshold": d.threshold, "num_perm": d.sketch.num_perm, "sketch_seed": d.sketch.seed,
                       "interval": "Wilson score, finite-population corrected; ratio: Bonferroni"},
            "a": _side_json(self.a), "b": _side_json(self.b),
            "a_in_b": _fraction_json(e.a_in_b), "b_in_a": _fraction_json(e.b_in_a),
            "size_ratio": {"estimate": _finite(e.size_ratio.estimate), "low": _finite(e.size_ratio.low),
                           "high": _finite(e.size_ratio.high)},
            "page_count_ratio": len(self.a.crawl.urls) / len(self.b.crawl.urls),
            "seconds": self.seconds,
        }


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _fraction_json(f) -> dict:
    estimated, low, high = f.pages()
    return {"estimate": f.estimate, "low": f.low, "high": f.high, "found": f.found, "sampled": f.sampled,
            "pages": f.population, "pages_estimate": estimated, "pages_low": low, "pages_high": high}


def _side_json(side: CrawlSample) -> dict:
    c = side.crawl
    return {
        "crawl": c.crawl, "pages": len(c.urls), "pages_without_words": c.without_words,
        "repeated_urls": c.repeated_urls, "sampled": len(side.urls), "found": side.found,
        "sample": [{"url": u, "match": m, "resemblance": float(r)}
                   for u, m, r in zip(side.urls, side.matches, side.resemblance.tolist())],
    }


def sketch_crawl(crawl: str, params: DedupParams = DedupParams()) -> SketchedCrawl:
    """The sketches of the crawl's pages that have words (title or text), as ``simweb dedup``
    makes them. Raises NoPagesToCompare when there is none."""
    pages, repeated = unique_pages(crawl, ["url", "title_words", "words"])
    fingerprints = page_fingerprints(pages, params.k)
    with_words = [i for i, f in enumerate(fingerprints) if f.size]
    if not with_words:
        raise NoPagesToCompare(
            f"{crawl}: none of its {pages.num_rows:,} pages has words to compare; expected a crawl of HTML "
            "pages with text (check what `simweb ingest` counted for its WARC files)")
    urls = pages.column("url").to_pylist()
    return SketchedCrawl(crawl, [urls[i] for i in with_words], sketch([fingerprints[i] for i in with_words],
                         params.sketch), repeated, pages.num_rows - len(with_words))


def _sample_side(crawl: SketchedCrawl, other: SketchedCrawl, params: OverlapParams, stream: int) -> CrawlSample:
    rows = sample_rows(len(crawl.urls), params.sample, params.seed, stream)
    found = near_duplicates_in(crawl.sketches.take(rows), other.sketches, params.dedup.threshold)
    matches = [other.urls[m] if m >= 0 else None for m in found.match.tolist()]
    return CrawlSample(crawl, [crawl.urls[r] for r in rows.tolist()], matches, found.estimate)


def estimate_crawl_overlap(crawl_a: str, crawl_b: str, params: OverlapParams = OverlapParams()) -> OverlapReport:
    """The fraction of A's pages with a near-duplicate in B, of B's in A, and |A|/|B| = y/x
    (lecture, "Intersection = x% of E1 = y% of E2, E1/E2 = y/x"), with intervals."""
    t0 = time.perf_counter()
    a = sketch_crawl(crawl_a, params.dedup)
    b = sketch_crawl(crawl_b, params.dedup)
    side_a = _sample_side(a, b, params, stream=0)
    side_b = _sample_side(b, a, params, stream=1)
    estimate = estimate_overlap(side_a.found, len(side_a.urls), len(a.urls), side_b.found, len(side_b.urls),
                                len(b.urls), params.confidence)
    return OverlapReport(side_a, side_b, estimate, params, round(time.perf_counter() - t0, 3))
