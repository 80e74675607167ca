"""Bags of terms: fragments, merging, document frequencies and weighting (paper Sections 3, 5.2, 6.1).

A page u's bag B_u = {(term, weight)} (Section 3) is the sum of *fragments* (Section 6.1):

* at most one **content** fragment per crawled page: the terms of its title and page words,
  each occurrence counting 1;
* one **anchor** fragment per inlink v → u: the anchor words (distance d = 0) and the
  context words of the anchor window, each at its distance d = its position among the
  context words on its side that are not stopwords under the strategy's stemming (1 = the
  nearest). Stopwords neither enter the bag nor count towards W (Section 3.1, footnote 5).
  BASIC keeps words with d ≤ W; SYNTACTIC and TOPICAL keep the words inside the region
  lengths the ingest stage stored on the link (counted in context words, stopwords included);
* one **title** fragment per crawled page when anchor windows are a source: the paper
  includes "the title of document u" in every anchor-based bag (Section 3.1). We add it once
  per bag, at d = 0, from the page's own title — not once per inlink, which would let the
  title swamp the anchor text of a much-linked page. A target that was not crawled has no
  known title and gets none; a crawled page nobody links to gets a bag of its title only;
* one **link-id** fragment per inlink: the term ``link:<source URL>`` counting 1;
* beyond the paper, one **out-link-id** fragment per outlink u → v, in u's bag: the term
  ``outlink:<target URL>`` counting 1 (bibliographic coupling as a bag, ENS Section 3.2).

With distance weighting an anchor-window occurrence counts log2(32/(1+d)) (so anchor and
title words count 5), otherwise 1; content and link-id terms always count 1 per occurrence.
**Self-links** (a page linking to itself, e.g. "top of page") are left out of the anchor and
link-id fragments (in and out): they would describe a page by its own words and give every page a
``link:`` term of its own, and the paper's anchor-window rationale — other authors' opinions
of u (Section 1) — does not hold for them. They are counted in :class:`CorpusStats`.

Fragments merge by adding weights term by term (associative and commutative, so they can be
combined in any order and grouping: within an input part, after a shuffle, …). The document
frequency of a term is the number of merged bags in the collection that contain it. Each
merged bag is then frequency-weighted and normalised to a constant sum (Section 6.1,
:mod:`simweb.core.weighting`). A strategy with source shares (simweb.core.strategy) weighs
each source's bags on their own and adds them in their shares, after merging
(:func:`weigh_shared`).

Two implementations of the same definitions:

* the record-level functions of :mod:`simweb.core.bag_reference` (``page_fragments``,
  ``link_fragments``, ``merge_fragments``, ``weigh_bags``, ``reference_bags``) — plain dicts,
  easy to read and check by hand;
* :class:`Corpus` — columnar numpy over a whole crawl, tokens interned once and term maps
  cached per stemming, so that sweeping many strategies over one crawl is fast; it returns a
  :class:`~simweb.core.bag_matrix.BagMatrix` (a CSR matrix of weighted bags). Tests check the two agree.

The columns a corpus is built from are :mod:`simweb.core.bag_columns`'s; bag matrices, their
weighting and the sum of source shares :mod:`simweb.core.bag_matrix`'s; the flat-array gather of
word runs and the merge of equal (URL, term) pairs :mod:`simweb.core.bag_entries`'s.
"""
from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Sequence
from itertools import compress

import numpy as np
import scipy.sparse as sp

from simweb.core.bag_columns import CorpusStats, LinkColumns, PageColumns, WordLists
from simweb.core.bag_entries import gather_runs
from simweb.core.bag_matrix import BagMatrix, MergedBags, weigh_merged, weigh_shared
from simweb.core.bag_reference import LINK_PREFIX, OUTLINK_PREFIX, LinkRow, PageRow
from simweb.core.strategy import MAX_WINDOW, Strategy, Window
from simweb.core.text import Stemming, term_texts
from simweb.core.weighting import ANCHOR_DISTANCE_WEIGHT, distance_weights

__all__ = ["Corpus", "build_bags", "term_map"]


class Corpus:
    """A crawl's pages and links in columnar form, for building the bags of many strategies fast.

    Words are interned once; per stemming the word → term map and the count of non-stopwords
    before every word of the link texts are computed once and cached, and the merged bags of
    the last few fragment settings are cached too, so a sweep over weighting variants only
    re-weights. URLs crawled twice keep their first page; self-links give no anchor or link-id
    fragment. URLs are read from the sequences given only when asked for (``urls``).

    Anchor windows (Section 3.1) are a windowed gather over word offsets: with C[p] the number
    of non-stopwords before position p of the link texts, a left-context word at p has distance
    C[anchor_start] − C[p] and a right-context word C[p + 1] − C[anchor_end], so the words of a
    BASIC window W are the positions between one binary search in C and the anchor, and those
    of a SYNTACTIC or TOPICAL region the positions within its stored length. Only the window's
    positions are ever expanded, never a link's whole context, and no step runs per link in
    Python. (On the 442,607 links of a 4,488-page part of the scale corpus, W = 32, STEM:
    24.7 s and 4.1 GB with the context words copied into per-link lists and ranked whole, 2.9 s
    with the gather; see benchmarks/bags.py.)
    """

    _MERGED_CACHE = 4

    def __init__(self, vocabulary: Sequence[str], pages: PageColumns, links: LinkColumns) -> None:
        self._words = list(vocabulary)
        n_pages = len(pages.url)
        for name in ("title_words", "words"):
            if len(getattr(pages, name)) != n_pages:
                raise ValueError(f"pages.{name}: expected {n_pages} word lists, got {len(getattr(pages, name))}")
        for wl in (pages.title_words, pages.words, links.texts):
            if wl.codes.size and (wl.codes.min() < 0 or wl.codes.max() >= len(self._words)):
                raise ValueError(f"word codes: expected 0…{len(self._words) - 1}, found {wl.codes.min()}…{wl.codes.max()}")

        page_ids = np.asarray(pages.url_id, dtype=np.uint64)
        _, first = np.unique(page_ids, return_index=True)
        keep = np.sort(first)
        self._page_ids = page_ids[keep]
        whole = keep.size == n_pages  # no page repeated: every list kept as it is, not copied
        self._page_title = pages.title_words if whole else pages.title_words.take(keep)
        # A page's content is its title's words and its text's, gathered as two runs (a bag
        # sums its terms, in whatever order they come), never copied into one list.
        self._page_words = pages.words if whole else pages.words.take(keep)

        source_id = np.asarray(links.source_id, dtype=np.uint64)
        target_id = np.asarray(links.target_id, dtype=np.uint64)
        n_links = source_id.size
        kept = np.flatnonzero(source_id != target_id)
        self._anchor, self._context = _link_positions(links, kept)
        self._text_codes = links.texts.codes
        self._regions = {
            Window.SYNTACTIC: (np.asarray(links.syntactic_left, np.int64)[kept],
                               np.asarray(links.syntactic_right, np.int64)[kept]),
            Window.TOPICAL: (np.asarray(links.topical_left, np.int64)[kept],
                             np.asarray(links.topical_right, np.int64)[kept]),
        }

        # Link sources are URLs too: an out-link-id fragment goes to the linking page's bag.
        ids = np.concatenate([self._page_ids, target_id[kept], source_id[kept]])
        self.url_ids, first_url, inverse = np.unique(ids, return_index=True, return_inverse=True)
        self.urls: Sequence[str] = _Picked([(pages.url, keep), (links.target_url, kept), (links.source_url, kept)],
                                           first_url)
        n_kept_pages, n_kept = self._page_ids.size, kept.size
        self._page_row = inverse[:n_kept_pages].astype(np.int64)
        self._link_row = inverse[n_kept_pages:n_kept_pages + n_kept].astype(np.int64)
        self._link_source_row = inverse[n_kept_pages + n_kept:].astype(np.int64)

        self._source_ids, first_src, link_source = np.unique(source_id[kept], return_index=True, return_inverse=True)
        self._source_urls: Sequence[str] = _Picked([(links.source_url, kept[first_src])], np.arange(first_src.size))
        self._link_source = link_source.astype(np.int64)

        self.stats = CorpusStats(
            pages=n_pages, duplicate_pages=n_pages - keep.size, links=n_links,
            self_links=n_links - kept.size, urls=self.url_ids.size,
        )
        self._term_maps: dict[Stemming, tuple[np.ndarray, list[str]]] = {}
        self._text_terms: dict[Stemming, tuple[np.ndarray, np.ndarray]] = {}
        self._merged: dict[str, MergedBags] = {}

    # -- construction ---------------------------------------------------------------------------

    @classmethod
    def from_rows(cls, pages: Iterable[PageRow], links: Iterable[LinkRow]) -> Corpus:
        """A corpus of record objects (e.g. built in tests or from ``table.to_pylist()``)."""
        pages, links = list(pages), list(links)
        index: dict[str, int] = {}
        page_cols = PageColumns(
            url=[p.url for p in pages],
            url_id=np.array([p.url_id for p in pages], dtype=np.uint64),
            title_words=WordLists.from_lists((p.title_words for p in pages), index),
            words=WordLists.from_lists((p.words for p in pages), index),
        )
        link_cols = LinkColumns.from_word_lists(
            source_url=[l.source_url for l in links],
            source_id=np.array([l.source_id for l in links], dtype=np.uint64),
            target_url=[l.target_url for l in links],
            target_id=np.array([l.target_id for l in links], dtype=np.uint64),
            anchor_words=WordLists.from_lists((l.anchor_words for l in links), index),
            left_words=WordLists.from_lists((l.left_words for l in links), index),
            right_words=WordLists.from_lists((l.right_words for l in links), index),
            syntactic_left=np.array([l.syntactic_left for l in links], dtype=np.int64),
            syntactic_right=np.array([l.syntactic_right for l in links], dtype=np.int64),
            topical_left=np.array([l.topical_left for l in links], dtype=np.int64),
            topical_right=np.array([l.topical_right for l in links], dtype=np.int64),
        )
        return cls(list(index), page_cols, link_cols)

    # -- per-stemming caches ---------------------------------------------------------------------

    def _term_map(self, stemming: Stemming) -> tuple[np.ndarray, list[str]]:
        """word code → term column (−1 for a stopword) and the term of each column."""
        cached = self._term_maps.get(stemming)
        if cached is None:
            cached = self._term_maps[stemming] = term_map(self._words, stemming)
        return cached

    def _terms_of_texts(self, stemming: Stemming) -> tuple[np.ndarray, np.ndarray]:
        """The link texts' non-stopwords under ``stemming``: the term column of each, in text
        order, and C, the number of non-stopwords before each text position (C[p] for
        p = 0 … len; it runs on across texts), so that the non-stopwords at positions
        [p, q) are entries C[p] … C[q] − 1 of the first array."""
        cached = self._text_terms.get(stemming)
        if cached is None:
            cols = self._term_map(stemming)[0][self._text_codes]
            counted = np.zeros(cols.size + 1, dtype=np.int64)
            np.cumsum(cols >= 0, out=counted[1:])
            cached = self._text_terms[stemming] = (cols[cols >= 0], counted)
        return cached

    def _window(self, side: int, strategy: Strategy, limit: int | None) -> tuple[np.ndarray, np.ndarray]:
        """One side's window (0 left, 1 right) of every link under ``strategy`` (Section 3.1), as
        runs of the link texts' non-stopwords (:meth:`_terms_of_texts`): the position of each
        run's nearest word and the run's length, at most ``limit`` words (None: no limit beyond
        the window's).

        On the left the run ends just before the anchor and is read backwards, on the right it
        starts at the anchor's end; the distance of its j-th word is j + 1. BASIC cuts the run
        at W words, SYNTACTIC and TOPICAL at the region's end (a count of context words,
        stopwords included).
        """
        counted = self._terms_of_texts(strategy.stemming)[1]
        start, end = self._anchor
        if side == 0:
            near = counted[start]
            far = counted[self._context[0]]
            if strategy.window is Window.BASIC:
                far = np.maximum(far, near - strategy.window_size)
            else:
                far = np.maximum(far, counted[np.maximum(start - self._regions[strategy.window][0], self._context[0])])
            lengths, nearest = near - far, near - 1
        else:
            near = counted[end]
            far = counted[self._context[1]]
            if strategy.window is Window.BASIC:
                far = np.minimum(far, near + strategy.window_size)
            else:
                far = np.minimum(far, counted[np.minimum(end + self._regions[strategy.window][1], self._context[1])])
            lengths, nearest = far - near, near
        if limit is not None:
            lengths = np.minimum(lengths, limit)
        return nearest, lengths

    def _entries(self, strategy: Strategy) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(url row, term column, weight) of every term occurrence of every fragment.

        Every word fragment is a set of runs — a page's words, a link's anchor, one side of its
        window — gathered by :func:`gather_runs` into arrays allocated once."""
        mapping, vocab = self._term_map(strategy.stemming)
        n_words = len(vocab)
        runs: list[tuple] = []  # the arguments of gather_runs before the outputs

        def lists(wl: WordLists, row_of_list: np.ndarray, weight: float) -> None:
            runs.append((wl.codes, wl.offsets[:-1], wl.lengths, 1, row_of_list, np.array([weight]), mapping))

        if strategy.uses_content:
            lists(self._page_title, self._page_row, 1.0)
            lists(self._page_words, self._page_row, 1.0)
        if strategy.uses_anchor:
            w0 = ANCHOR_DISTANCE_WEIGHT if strategy.distance_weighting else 1.0
            lists(self._page_title, self._page_row, w0)
            text_cols, counted = self._terms_of_texts(strategy.stemming)
            first, last = counted[self._anchor[0]], counted[self._anchor[1]]
            runs.append((text_cols, first, last - first, 1, self._link_row, np.array([w0]), None))
            limit, table = None, np.ones(1)
            if strategy.distance_weighting:
                # Weights by distance, looked up (the same bits as weighing word by word); a
                # word at distance d ≥ 31 weighs 0 and leaves the bag, so no side reads further.
                table = distance_weights(np.arange(MAX_WINDOW + 2))
                limit = int(np.flatnonzero(table[1:] <= 0)[0])
            for side in (0, 1):
                nearest, lengths = self._window(side, strategy, limit)
                runs.append((text_cols, nearest, lengths, 1 if side else -1, self._link_row, table, None))
        ids: list[tuple[np.ndarray, np.ndarray]] = []  # (rows, columns) of entries of weight 1
        if strategy.uses_links:
            ids.append((self._link_row, n_words + self._link_source))
        if strategy.uses_outlinks:
            # Out-link ids have one column per URL: the target's row.
            ids.append((self._link_source_row, n_words + len(self._source_urls) + self._link_row))

        total = sum(int(np.maximum(run[2], 0).sum()) for run in runs) + sum(r.size for r, _ in ids)
        rows, cols, vals = np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total)
        at = 0
        for run in runs:
            at = gather_runs(*run, rows, cols, vals, at)
        for r, c in ids:
            rows[at:at + r.size], cols[at:at + r.size], vals[at:at + r.size] = r, c, 1.0
            at += r.size
        return rows[:at], cols[:at], vals[:at]

    def vocabulary(self, stemming: Stemming) -> list[str]:
        """Every term column: word terms under ``stemming``, then ``link:<URL>`` of every inlinking
        page, then ``outlink:<URL>`` of every URL."""
        return list(Vocabulary(self, stemming))

    def fragment_entries(self, strategy: Strategy) -> tuple[np.ndarray, np.ndarray, np.ndarray, Vocabulary]:
        """(url row, term column, weight) of every term occurrence of every fragment, not yet
        summed, and the term of each column: for a caller that sums equal pairs its own way
        (:meth:`merged` sums them into a CSR matrix). Row i is the URL ``url_ids[i]``."""
        rows, cols, vals = self._entries(strategy)
        return rows, cols, vals, Vocabulary(self, strategy.stemming)

    def merged(self, strategy: Strategy) -> MergedBags:
        """Every URL's fragments merged (summed), before frequency weighting (Section 6.1)."""
        key = json.dumps(strategy.fragment_params(), sort_keys=True)
        cached = self._merged.get(key)
        if cached is None:
            rows, cols, vals = self._entries(strategy)
            n_cols = len(Vocabulary(self, strategy.stemming))
            csr = sp.csr_matrix((vals, (rows, cols)), shape=(self.url_ids.size, n_cols))
            csr.sum_duplicates()
            csr.eliminate_zeros()
            cached = MergedBags(self.url_ids, self.urls, Vocabulary(self, strategy.stemming), csr)
            if len(self._merged) >= self._MERGED_CACHE:
                self._merged.pop(next(iter(self._merged)))
            self._merged[key] = cached
        return cached

    def bags(self, strategy: Strategy, targets: Collection[int] | None = None) -> BagMatrix:
        """The weighted bags of ``targets`` (URL ids; None = every URL), df over the whole corpus.

        Document frequencies and fitted NMDF parameters always come from every bag in the
        corpus, so a sample's bags are exactly those of the full collection. Targets without a
        bag (not crawled and not linked to, or all their words stopwords) are absent from the
        result; check with ``url_id in matrix``. With source shares, each source is weighted on
        its own (:func:`weigh_shared`).
        """
        if strategy.shares is not None:
            parts = []
            for source, share in strategy.share_of().items():
                single = strategy.source_strategy(source)
                parts.append((share, weigh_merged(self.merged(single), single, keep_empty=True)))
            return weigh_shared(parts, targets)
        merged = self.merged(strategy)
        return weigh_merged(merged, strategy, targets)


class Vocabulary(Sequence[str]):
    """A corpus's term columns, turned into strings only when looked at."""

    def __init__(self, corpus: Corpus, stemming: Stemming) -> None:
        self._words = corpus._term_map(stemming)[1]
        self._sources = corpus._source_urls
        self._targets = corpus.urls

    def __len__(self) -> int:
        return len(self._words) + len(self._sources) + len(self._targets)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        n, k = len(self._words), len(self._sources)
        if i < n:
            return self._words[i]
        return LINK_PREFIX + self._sources[i - n] if i < n + k else OUTLINK_PREFIX + self._targets[i - n - k]

    def take(self, columns: np.ndarray) -> list[str]:
        """The terms of ``columns`` (in ascending order), the words' in one list comprehension."""
        n, k = len(self._words), len(self._sources)
        split = np.searchsorted(columns, [n, n + k])
        words = self._words
        return ([words[i] for i in columns[:split[0]].tolist()]
                + [LINK_PREFIX + self._sources[i - n] for i in columns[split[0]:split[1]].tolist()]
                + [OUTLINK_PREFIX + self._targets[i - n - k] for i in columns[split[1]:].tolist()])

    def __iter__(self) -> Iterator[str]:
        yield from self._words
        for u in self._sources:
            yield LINK_PREFIX + u
        for u in self._targets:
            yield OUTLINK_PREFIX + u


def _link_positions(links: LinkColumns, kept: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray],
                                                                    tuple[np.ndarray, np.ndarray]]:
    """The anchor (start, end) and context (start, end) of the links ``kept`` as positions in
    ``links.texts.codes``; raises ValueError when an anchor does not fit its text."""
    text = np.asarray(links.text, dtype=np.int64)
    a0, a1, c0, c1 = (np.asarray(getattr(links, name), dtype=np.int64)
                      for name in ("anchor_start", "anchor_end", "context_start", "context_end"))
    n = text.size
    for name, column in (("anchor_start", a0), ("anchor_end", a1), ("context_start", c0), ("context_end", c1)):
        if column.size != n:
            raise ValueError(f"links.{name}: expected {n} offsets (one per link), got {column.size}")
    if n and (text.min() < 0 or text.max() >= len(links.texts)):
        raise ValueError(f"links.text: expected rows 0…{len(links.texts) - 1} of links.texts, "
                         f"found {text.min()}…{text.max()}")
    length = links.texts.lengths[text] if n else np.zeros(0, np.int64)
    bad = (c0 < 0) | (c0 > a0) | (a0 > a1) | (a1 > c1) | (c1 > length)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"links: expected 0 <= context_start <= anchor_start <= anchor_end <= context_end <= len(text) "
            f"for every link, found {c0[i]}, {a0[i]}, {a1[i]}, {c1[i]} with {length[i]} words in link {i} "
            f"({int(bad.sum())} such links)"
        )
    base = links.texts.offsets[:-1][text[kept]]
    return (base + a0[kept], base + a1[kept]), (base + c0[kept], base + c1[kept])


class _Picked(Sequence[str]):
    """Items chosen from several sequences: ``parts`` are (sequence, index) pairs, and item i is
    the ``chosen[i]``-th of their items taken in turn (``sequence[index[k]]`` for each part).
    The sequences are read only when an item is asked for (they may be Arrow columns)."""

    def __init__(self, parts: Sequence[tuple[Sequence[str], np.ndarray]], chosen: np.ndarray) -> None:
        chosen = np.asarray(chosen, dtype=np.int64)
        ends = np.cumsum([len(index) for _, index in parts])
        self._sequences = [sequence for sequence, _ in parts]
        self._part = np.searchsorted(ends, chosen, side="right")
        self._index = np.empty(chosen.size, dtype=np.int64)
        for k, (_, index) in enumerate(parts):
            mine = self._part == k
            self._index[mine] = np.asarray(index, dtype=np.int64)[chosen[mine] - (ends[k] - len(index))]

    def __len__(self) -> int:
        return self._index.size

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return self._sequences[int(self._part[i])][int(self._index[i])]

    def __iter__(self) -> Iterator[str]:
        for part, index in zip(self._part.tolist(), self._index.tolist()):
            yield self._sequences[part][index]


def build_bags(pages: Iterable[PageRow] | Corpus, links: Iterable[LinkRow] = (), strategy: Strategy | None = None,
               targets: Collection[int] | None = None) -> BagMatrix:
    """The weighted bags of a crawl under ``strategy`` (default: :class:`Strategy`()), df over the crawl.

    For one strategy. To sweep several over the same crawl, build a :class:`Corpus` once and
    call :meth:`Corpus.bags` per strategy (``pages`` may also be that corpus).
    """
    corpus = pages if isinstance(pages, Corpus) else Corpus.from_rows(pages, links)
    return corpus.bags(strategy or Strategy(), targets)


def term_map(words: Sequence[str], stemming: Stemming) -> tuple[np.ndarray, list[str]]:
    """For each of ``words``, its term's column (−1 for a stopword), columns numbered in the
    order the terms first occur; and the term of each column — ``term(word, stemming)`` word
    by word, in C-level maps over the words (simweb.core.text.term_texts), not a Python step a word."""
    texts, stopped = term_texts(words, stemming)
    stopped = np.array(stopped, dtype=bool)
    kept = list(compress(texts, np.logical_not(stopped).tolist()))
    first = dict.fromkeys(kept)  # the terms in the order they first occur
    column = dict(zip(first, range(len(first))))
    mapping = np.full(len(words), -1, dtype=np.int64)
    mapping[~stopped] = np.fromiter(map(column.__getitem__, kept), np.int64, len(kept))
    return mapping, list(first)
