"""The evaluation sample: pairs of sibling third-level classes (paper Section 5).

The paper "sampled Open Directory to get 300 pairs of clusters from the third level in the
hierarchy, as depicted previously in Figure 1", and kept the URLs of those clusters that some
crawled page links to (51,469 of them), since only those can be judged by anchor strategies.

Decision — what "300 pairs of clusters" means here. A *pair* is two **sibling** third-level
classes (same second-level parent). Read this way, the sample is built so that every source
has a sibling class next to its own, which is what the paper's headline measure, sibling-Γ,
needs: sampling 600 third-level classes independently from a directory of thousands would
leave most classes without any sibling in the sample, and sibling-Γ would rest on a handful of
sources. Figure 1 depicts exactly this neighbourhood (the source's class, a sibling class,
cousin classes, unrelated classes). Cousins and unrelated documents come from the other pairs.

How pairs are drawn, with a seeded generator so the same seed gives the same sample:
1. A class is eligible when at least ``min_pages`` of its URLs are linked to by some crawled
   page (so each source has a same-class document to compare).
2. Within each second-level parent, the eligible children are shuffled and paired off two by
   two, giving disjoint sibling pairs (no class is used twice; an odd one out is left over).
3. ``n_pairs`` of the pooled pairs are drawn uniformly without replacement (all of them when
   fewer exist — the description says so).
4. Optionally, at most ``max_pages_per_class`` URLs are drawn per class, to bound the cost of
   exact all-pairs similarity; the paper did not cap classes.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Container, Mapping
from dataclasses import dataclass

import numpy as np

from simweb.core.gamma import DISTANCE_NAMES, class_codes, distance_names

Class = tuple[str, ...]

PAPER_PAIRS = 300


@dataclass(frozen=True, slots=True)
class Sample:
    """The sampled documents (sorted by class, then URL) and how they were drawn."""

    urls: tuple[str, ...]
    classes: tuple[Class, ...]
    class_pairs: tuple[tuple[Class, Class], ...]
    seed: int
    pairs_requested: int
    pairs_available: int
    eligible_classes: int
    eligible_urls: int
    # Eligible classes left out because pairing siblings two by two left them over (the odd one
    # out under a parent with an odd number of eligible children, or an only child).
    unpaired: tuple[Class, ...] = ()

    def __len__(self) -> int:
        return len(self.urls)


def eligible_urls(classes: Mapping[str, Class], linked: Container[str]) -> dict[Class, list[str]]:
    """Directory URLs that some crawled page links to, grouped by class (sorted)."""
    by_class: dict[Class, list[str]] = defaultdict(list)
    for url, cls in classes.items():
        if url in linked:
            by_class[cls].append(url)
    return {cls: sorted(urls) for cls, urls in sorted(by_class.items())}


def sample_class_pairs(
    classes: Mapping[str, Class],
    linked: Container[str],
    *,
    n_pairs: int = PAPER_PAIRS,
    seed: int = 0,
    min_pages: int = 2,
    max_pages_per_class: int | None = None,
) -> Sample:
    """Draw ``n_pairs`` pairs of sibling classes and their linked-to URLs (see the module doc).

    ``classes`` maps a normalised URL to its collapsed class (``Directory.classes``); ``linked``
    holds the normalised URLs that some crawled, non-directory page links to.
    """
    if n_pairs < 1:
        raise ValueError(f"n_pairs must be at least 1, got {n_pairs}")
    if min_pages < 1:
        raise ValueError(f"min_pages must be at least 1, got {min_pages}")
    if max_pages_per_class is not None and max_pages_per_class < min_pages:
        raise ValueError(
            f"max_pages_per_class ({max_pages_per_class}) must be at least min_pages ({min_pages})"
        )
    rng = np.random.default_rng(seed)
    by_class = eligible_urls(classes, linked)
    eligible = {cls: urls for cls, urls in by_class.items() if len(urls) >= min_pages}

    children: dict[Class, list[Class]] = defaultdict(list)
    for cls in sorted(eligible):
        children[cls[:-1]].append(cls)
    pool: list[tuple[Class, Class]] = []
    unpaired: list[Class] = []
    for parent in sorted(children):
        kids = children[parent]
        order = rng.permutation(len(kids))
        for i in range(0, len(kids) - 1, 2):
            a, b = kids[order[i]], kids[order[i + 1]]
            pool.append((min(a, b), max(a, b)))
        if len(kids) % 2:
            unpaired.append(kids[order[-1]])

    take = min(n_pairs, len(pool))
    chosen = sorted(pool[i] for i in rng.choice(len(pool), size=take, replace=False)) if take else []

    urls: list[str] = []
    url_classes: list[Class] = []
    for cls in sorted({c for pair in chosen for c in pair}):
        members = eligible[cls]
        if max_pages_per_class is not None and len(members) > max_pages_per_class:
            keep = rng.choice(len(members), size=max_pages_per_class, replace=False)
            members = [members[i] for i in sorted(keep)]
        urls.extend(members)
        url_classes.extend([cls] * len(members))
    return Sample(
        urls=tuple(urls),
        classes=tuple(url_classes),
        class_pairs=tuple(chosen),
        seed=seed,
        pairs_requested=n_pairs,
        pairs_available=len(pool),
        eligible_classes=len(eligible),
        eligible_urls=sum(len(u) for u in by_class.values()),
        unpaired=tuple(sorted(unpaired)),
    )


@dataclass(frozen=True, slots=True)
class SampleDescription:
    """What a report says about the sample (paper Section 5's description of its own)."""

    urls: int
    classes: int
    class_pairs: int
    pairs_requested: int
    pairs_available: int
    top_level_categories: tuple[str, ...]
    pages_per_class_min: int
    pages_per_class_median: float
    pages_per_class_max: int
    # Per familial distance (same, sibling, cousin, unrelated): documents at that distance
    # from a source, summed over all sources, and the mean per source.
    documents_per_distance: tuple[int, ...]
    mean_documents_per_distance: tuple[float, ...]
    unpaired: tuple[str, ...] = ()  # classes ("Top/a/b/c") left over when siblings were paired

    #: Unpaired classes named in :meth:`lines`; the rest are counted.
    NAMED_UNPAIRED = 10

    def lines(self) -> list[str]:
        per = ", ".join(
            f"{name} {total:,} ({mean:.1f} per source)"
            for name, total, mean in zip(
                distance_names(len(self.documents_per_distance) - 1), self.documents_per_distance,
                self.mean_documents_per_distance
            )
        )
        depth = len(self.documents_per_distance) - 1
        level = {1: "first", 2: "second", 3: "third", 4: "fourth"}.get(depth, f"level-{depth}")
        lines = [
            f"{self.urls:,} URLs in {self.classes} classes = {self.class_pairs} pairs of sibling "
            f"{level}-level classes ({self.pairs_requested} requested, {self.pairs_available} available)",
            f"top-level categories: {', '.join(self.top_level_categories)}",
            f"pages per class: min {self.pages_per_class_min}, median {self.pages_per_class_median:g}, "
            f"max {self.pages_per_class_max}",
            f"documents per familial distance from a source: {per}",
        ]
        if self.unpaired:
            named = ", ".join(self.unpaired[:self.NAMED_UNPAIRED])
            more = len(self.unpaired) - self.NAMED_UNPAIRED
            lines.append(f"left out when sibling classes were paired ({len(self.unpaired)}, the odd one out under "
                         f"its parent): {named}" + (f" and {more} more" if more > 0 else ""))
        return lines


def describe(sample: Sample) -> SampleDescription:
    """Sample size, classes, and how many documents lie at each familial distance."""
    n = len(sample.urls)
    sizes = np.array(sorted(Counter(sample.classes).values()), dtype=np.int64)
    if n == 0:
        zeros = (0,) * len(DISTANCE_NAMES)
        return SampleDescription(0, 0, 0, sample.pairs_requested, sample.pairs_available, (), 0, 0.0, 0,
                                 zeros, (0.0,) * len(DISTANCE_NAMES), _topics(sample.unpaired))
    codes = class_codes(list(sample.classes))
    depth = codes.shape[1]
    # Documents sharing a k-level prefix with each source, k = depth..0 (the source included).
    sharing = [np.full(n, n, dtype=np.int64)]
    for k in range(depth):
        _, inverse, counts = np.unique(codes[:, k], return_inverse=True, return_counts=True)
        sharing.append(counts[inverse.ravel()])
    # sharing[k] = documents (the source included) whose class shares a prefix of length >= k
    # with the source's; familial distance is depth minus the exact common prefix length.
    per_distance = [sharing[depth] - 1]
    for k in range(depth - 1, -1, -1):
        per_distance.append(sharing[k] - sharing[k + 1])
    totals = tuple(int(x.sum()) for x in per_distance)
    means = tuple(float(x.mean()) for x in per_distance)
    return SampleDescription(
        urls=n,
        classes=len(sizes),
        class_pairs=len(sample.class_pairs),
        pairs_requested=sample.pairs_requested,
        pairs_available=sample.pairs_available,
        top_level_categories=tuple(sorted({c[0] for c in sample.classes})),
        pages_per_class_min=int(sizes.min()),
        pages_per_class_median=float(np.median(sizes)),
        pages_per_class_max=int(sizes.max()),
        documents_per_distance=totals,
        mean_documents_per_distance=means,
        unpaired=_topics(sample.unpaired),
    )


def _topics(classes) -> tuple[str, ...]:
    return tuple("Top/" + "/".join(c) for c in classes)

