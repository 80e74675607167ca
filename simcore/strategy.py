"""A similarity-search *strategy*: every choice the paper evaluates, as one frozen value.

Paper Sections 3 and 4 name the dimensions; Section 5 sweeps them (Figures 3–9):

* term sources (Section 3.1): page **content**, **anchor** windows of inlinks, **links**
  (the URLs of inlinking pages), or any non-empty combination (Figure 5's hybrids); beyond
  the paper, **outlinks** (the URLs a page links to: bibliographic coupling as a bag, ENS
  Section 3.2) and **source shares** (see below);
* anchor window (Section 3.1): BASIC with ``W`` non-stopword words each side
  (W ∈ {0, 4, 8, 16, 32} in the paper), SYNTACTIC or TOPICAL region bounds;
* stemming (Section 3.2): NOSTEM, STOPSTEM, STEM;
* distance weighting log2(32/(1+d)) of anchor-window words (Section 5.2, Figure 6);
* frequency weighting (Section 5.2, Figure 7): none, log, sqrt or NMDF with parameters μ, σ;
  beyond the paper, binary (every term of a bag counts 1: the bag as a set);
* normalisation of each bag to a constant sum (Section 6.1);
* the similarity metric (Section 4): bag Jaccard, or cosine as the comparison; beyond the
  paper, **overlap** (see below).

A :class:`Strategy` is a stdlib frozen dataclass: hashable, comparable, usable as a cache key
(:meth:`Strategy.key`) and as a Prefect flow parameter (pydantic validates a dict or JSON
into it and calls ``__post_init__``, so a bad value is refused before a flow runs).

Source shares (beyond the paper)
--------------------------------
The paper's hybrids (Figure 5) add the terms of every source on an equal footing, so a long
page's content swamps the anchor words of a hybrid bag and link ids are a sliver of it
(Section 5.1 notes both effects). With **shares** each source is weighted on its own — its
terms frequency-weighted by their document frequency among that source's parts — and
normalised to its share of the bag's mass: a page's bag is Σ_k share_k · B_k, where B_k is its
bag under the source k alone (normalised to the strategy's constant sum). A page without terms
from a source has no part for it (its bag's mass is the sum of the shares of the sources it
has: what is missing is missing evidence, not a reason to inflate the other sources). Shares
are positive and sum to 1; a strategy of one source has none (that source is the whole bag).
Text form: ``anchor:32@0.5+links@0.25+outlinks@0.25,stem,dist,nmdf``.

Overlap (beyond the paper)
--------------------------
Normalising every bag to one sum (Section 6.1) makes a bag's size carry no weight, which is
what Jaccard and cosine want. The link measures of ENS Section 3.2 count instead: bibliographic
coupling is the number of out-links two pages share, co-citation the number of pages linking to
both — and on crawls whose directory follows the site's navigation they order pages best. The
metric **overlap** compares bags as weighted, *not* normalised: Σ_t min(A_t, B_t). Over out-link
ids counted as a set (``outlinks,binary,overlap``) it is bibliographic coupling, |O(a) ∩ O(b)|,
over in-link ids (``links,binary,overlap``) co-citation, |I(a) ∩ I(b)|; with ``none`` a link
given twice counts twice (the multiset form). It stays indexable: for the weighted Jaccard J of the same bags,
Σ min = J (|A| + |B|) / (1 + J), so the min-hash index finds the candidates by J and the query
orders them by overlap. Source shares normalise every source, so they do not go with overlap.

Choosing μ and σ of NMDF
------------------------
The paper gives the shape (a Gaussian in log df, Figure 8, drawn over df = 1 … 10,000) but
not the values. When ``nmdf_mu`` and ``nmdf_sigma`` are left ``None`` they are fitted to the
collection's df distribution by :func:`simweb.core.weighting.fit_nmdf`: the peak sits at the
geometric middle of the observed df range, μ = (ln df_min + ln df_max)/2, and σ is a quarter
of that range, so the rarest and the commonest terms lie 2σ from the peak and keep e^-2 ≈ 0.14
of their weight. This is the paper's intent — attenuate both ends, favour mid-frequency terms
("resolving power", Section 3.3) — and it adapts to the crawl's size. The obvious alternative,
the mean and standard deviation of ln df over distinct terms, is dominated by the many
terms seen in one bag only (Zipf), which would put the peak on the rare terms the paper wants
to attenuate. Explicit values (natural-log units, as :func:`simweb.core.weighting.nmdf_factor`)
can be given instead; the fitted values are recorded with the bags.
"""
from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from simweb.core.errors import StrategyError
from simweb.core.text import Stemming

__all__ = [
    "MAX_WINDOW",
    "PAPER_WINDOWS",
    "Frequency",
    "Metric",
    "Source",
    "Strategy",
    "StrategyError",
    "Window",
    "paper_grid",
    "paper_strategies",
]

#: The widest BASIC window the ingest stage keeps context for (32 non-stopwords each side).
MAX_WINDOW = 32
#: The BASIC window sizes of the paper (Section 3.1, Figure 3).
PAPER_WINDOWS = (0, 4, 8, 16, 32)



class Source(str, enum.Enum):
    """Where a bag's terms come from (Section 3.1 and the introduction's three approaches).

    ``links`` are the ids of the pages linking to a page (in-links, the paper's link-based
    approach); ``outlinks`` the ids of the pages it links to (bibliographic coupling as a bag,
    ENS Section 3.2), beyond the paper.
    """

    ANCHOR = "anchor"
    CONTENT = "content"
    LINKS = "links"
    OUTLINKS = "outlinks"


class Window(str, enum.Enum):
    """How far around an anchor the anchor window reaches (Section 3.1)."""

    BASIC = "basic"
    SYNTACTIC = "syntactic"
    TOPICAL = "topical"


class Frequency(str, enum.Enum):
    """Frequency weighting of a term with bag frequency tf and document frequency df (Section 5.2)."""

    NONE = "none"  # tf
    BINARY = "binary"  # 1 for every term of the bag: the bag as a set (beyond the paper)
    LOG = "log"  # tf / (1 + log2 df)
    SQRT = "sqrt"  # tf / sqrt(df)
    NMDF = "nmdf"  # tf * exp(-1/2 ((ln df - mu) / sigma)^2)


class Metric(str, enum.Enum):
    """Similarity of two bags (Section 4)."""

    JACCARD = "jaccard"  # sum of min multiplicities / sum of max multiplicities
    COSINE = "cosine"
    OVERLAP = "overlap"  # sum of min multiplicities of bags not normalised (beyond the paper)


_SOURCE_ORDER = {Source.ANCHOR: 0, Source.CONTENT: 1, Source.LINKS: 2, Source.OUTLINKS: 3}
#: Source names the text form reads besides the values of :class:`Source`.
_SOURCE_ALIASES = {"inlinks": Source.LINKS}
#: How far the shares of a strategy may sum from 1 (rounding of decimal shares such as 0.1 + 0.2).
_SHARE_TOLERANCE = 1e-9


def _coerce(enum_type: type[enum.Enum], value: Any, field: str) -> Any:
    if isinstance(value, enum_type):
        return value
    try:
        return enum_type(value.lower() if isinstance(value, str) else value)
    except ValueError:
        choices = ", ".join(repr(m.value) for m in enum_type)
        raise StrategyError(f"{field}: expected one of {choices}, got {value!r}") from None


@dataclass(frozen=True, slots=True)
class Strategy:
    """One point of the paper's strategy space (Sections 3–5). Defaults: the paper's Section 7 choice
    (W = 32 anchor windows plus content, STEM, distance and NMDF frequency weighting, Jaccard).

    ``window_size`` is W of BASIC windows; with SYNTACTIC or TOPICAL windows, or without anchor
    terms, it is stored as 32 (and ``window`` as BASIC without anchor terms) whatever was given.
    ``dedup`` (beyond the paper, off by default) collapses each cluster of near-duplicate pages
    to one representative before the bags are built (the ``dedup`` stage of ``build_index``).
    """

    sources: tuple[Source, ...] = (Source.ANCHOR, Source.CONTENT)
    window: Window = Window.BASIC
    window_size: int = MAX_WINDOW
    stemming: Stemming = Stemming.STEM
    distance_weighting: bool = True
    frequency: Frequency = Frequency.NMDF
    nmdf_mu: float | None = None
    nmdf_sigma: float | None = None
    normalise_to: float = 1.0
    metric: Metric = Metric.JACCARD
    dedup: bool = False
    shares: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        raw_sources = (self.sources,) if isinstance(self.sources, (str, Source)) else tuple(self.sources)
        coerced = [_coerce(Source, s, "sources") for s in raw_sources]
        sources = set(coerced)
        if not sources:
            raise StrategyError(
                "sources: expected at least one of 'anchor', 'content', 'links', 'outlinks', got none; "
                "name the term sources, e.g. sources=('anchor', 'content')"
            )
        ordered = tuple(sorted(sources, key=_SOURCE_ORDER.__getitem__))
        set_(self, "shares", _canonical_shares(self.shares, coerced, ordered))
        set_(self, "sources", ordered)
        set_(self, "window", _coerce(Window, self.window, "window"))
        set_(self, "stemming", _coerce(Stemming, self.stemming, "stemming"))
        set_(self, "frequency", _coerce(Frequency, self.frequency, "frequency"))
        set_(self, "metric", _coerce(Metric, self.metric, "metric"))
        if isinstance(self.window_size, bool) or not isinstance(self.window_size, int):
            raise StrategyError(f"window_size: expected an integer 0…{MAX_WINDOW}, got {self.window_size!r}")
        if not 0 <= self.window_size <= MAX_WINDOW:
            raise StrategyError(
                f"window_size: expected 0…{MAX_WINDOW} words (the context the ingest stage keeps), "
                f"got {self.window_size}; the paper uses {', '.join(map(str, PAPER_WINDOWS))}"
            )
        # Window settings that cannot matter are stored canonically, so that equal bags mean
        # equal strategies where it costs nothing: W applies to BASIC windows only, and no
        # window applies without anchor terms.
        if not self.uses_anchor:
            set_(self, "window", Window.BASIC)
        if self.window is not Window.BASIC or not self.uses_anchor:
            set_(self, "window_size", MAX_WINDOW)
        if not isinstance(self.distance_weighting, bool):
            raise StrategyError(f"distance_weighting: expected true or false, got {self.distance_weighting!r}")
        if (self.nmdf_mu is None) != (self.nmdf_sigma is None):
            raise StrategyError(
                f"nmdf_mu/nmdf_sigma: expected both or neither, got mu={self.nmdf_mu!r}, sigma={self.nmdf_sigma!r}; "
                "leave both unset to fit them to the collection's document frequencies"
            )
        if self.nmdf_mu is not None:
            if self.frequency is not Frequency.NMDF:
                raise StrategyError(
                    f"nmdf_mu/nmdf_sigma: only used with frequency='nmdf', got frequency={self.frequency.value!r}; "
                    "drop the NMDF parameters or choose frequency='nmdf'"
                )
            mu, sigma = float(self.nmdf_mu), float(self.nmdf_sigma)
            if not math.isfinite(mu):
                raise StrategyError(f"nmdf_mu: expected a finite number (ln of a document frequency), got {mu!r}")
            if not (math.isfinite(sigma) and sigma > 0):
                raise StrategyError(f"nmdf_sigma: expected a positive number (natural-log units), got {sigma!r}")
            set_(self, "nmdf_mu", mu)
            set_(self, "nmdf_sigma", sigma)
        norm = self.normalise_to
        if isinstance(norm, bool) or not isinstance(norm, (int, float)) or not math.isfinite(norm) or norm <= 0:
            raise StrategyError(f"normalise_to: expected a positive number (the sum of every bag), got {norm!r}")
        set_(self, "normalise_to", float(norm))
        if self.metric is Metric.OVERLAP:
            if self.shares is not None:
                raise StrategyError(
                    "metric 'overlap' compares bags as weighted, not normalised, and source shares normalise "
                    "every source: drop the shares or choose 'jaccard'"
                )
            # Overlap bags are not normalised, so the constant sum cannot matter.
            set_(self, "normalise_to", 1.0)
        if not isinstance(self.dedup, bool):
            raise StrategyError(f"dedup: expected true or false, got {self.dedup!r}")

    # -- what the strategy uses ---------------------------------------------------------------

    @property
    def uses_anchor(self) -> bool:
        return Source.ANCHOR in self.sources

    @property
    def uses_content(self) -> bool:
        return Source.CONTENT in self.sources

    @property
    def uses_links(self) -> bool:
        return Source.LINKS in self.sources

    @property
    def uses_outlinks(self) -> bool:
        return Source.OUTLINKS in self.sources

    @property
    def normalised(self) -> bool:
        """Whether the bags are scaled to ``normalise_to`` (Section 6.1): all but overlap's (see "Overlap")."""
        return self.metric is not Metric.OVERLAP

    def share_of(self) -> dict[Source, float]:
        """Each source's share of the bag's mass (empty without shares: one bag, equal footing)."""
        return dict(zip(self.sources, self.shares)) if self.shares is not None else {}

    def source_strategy(self, source: Source) -> Strategy:
        """This strategy restricted to one of its sources, without shares: how that source's
        part of a shared bag is built and weighted (see "Source shares" above)."""
        if source not in self.sources:
            raise StrategyError(f"{source.value!r} is not a source of {self.spec()!r}")
        return dataclasses.replace(self, sources=(source,), shares=None)

    # -- plain forms ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of every field (enum values as strings); ``from_dict`` reads it back."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, enum.Enum):
                value = value.value
            elif isinstance(value, tuple):
                value = [v.value if isinstance(v, enum.Enum) else v for v in value]
            out[f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Strategy:
        """The strategy of a dict as written by :meth:`to_dict` (missing fields take the defaults)."""
        if not isinstance(data, dict):
            raise StrategyError(f"expected a JSON object of strategy fields, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise StrategyError(
                f"unknown strategy field(s) {', '.join(unknown)}; expected some of {', '.join(sorted(names))}"
            )
        return cls(**data)

    def bag_params(self) -> dict[str, Any]:
        """The fields that decide the weighted bags, with those that cannot matter dropped.

        Two strategies with equal ``bag_params`` build identical bags (the metric, for one,
        only matters when bags are compared), so the bags stage keys its output on this.
        """
        params = self.fragment_params()
        params["frequency"] = self.frequency.value
        if self.frequency is Frequency.NMDF:
            params["nmdf"] = "fit" if self.nmdf_mu is None else [self.nmdf_mu, self.nmdf_sigma]
        params["normalise_to"] = self.normalise_to if self.normalised else None
        if self.shares is not None:
            params["shares"] = list(self.shares)
        return params

    def fragment_params(self) -> dict[str, Any]:
        """The fields that decide the bag fragments and merged (unweighted) bags."""
        params: dict[str, Any] = {"sources": [s.value for s in self.sources], "stemming": self.stemming.value}
        if self.uses_anchor:
            params["window"] = self.window.value
            if self.window is Window.BASIC:
                params["window_size"] = self.window_size
            params["distance_weighting"] = self.distance_weighting
        if self.dedup:
            params["dedup"] = True
        return params

    def key(self) -> str:
        """A stable 16-hex-digit id of the whole strategy (bag parameters and metric)."""
        return _digest({"bags": self.bag_params(), "metric": self.metric.value})

    def bags_key(self) -> str:
        """A stable 16-hex-digit id of :meth:`bag_params`: equal for strategies with equal bags."""
        return _digest(self.bag_params())

    @property
    def label(self) -> str:
        """A short human label, e.g. ``anchor-W32+content dist nmdf stem`` (cosine added when used)."""
        parts = []
        for source in self.sources:
            if source is Source.ANCHOR:
                w = f"W{self.window_size}" if self.window is Window.BASIC else self.window.value
                parts.append(f"anchor-{w}")
            else:
                parts.append(source.value)
        words = ["+".join(self._with_shares(parts))]
        if self.uses_anchor and self.distance_weighting:
            words.append("dist")
        if self.frequency is Frequency.NMDF and self.nmdf_mu is not None:
            words.append(f"nmdf(mu={self.nmdf_mu:g},sigma={self.nmdf_sigma:g})")
        else:
            words.append(self.frequency.value)
        words.append(self.stemming.value)
        if self.normalise_to != 1.0:
            words.append(f"norm={self.normalise_to:g}")
        if self.metric is not Metric.JACCARD:
            words.append(self.metric.value)
        if self.dedup:
            words.append("dedup")
        return " ".join(words)

    def __str__(self) -> str:
        return self.label

    def _with_shares(self, parts: list[str]) -> list[str]:
        if self.shares is None:
            return parts
        return [f"{part}@{share!r}" for part, share in zip(parts, self.shares)]

    # -- the compact text form --------------------------------------------------------------------

    def spec(self) -> str:
        """The compact text form, every field explicit: ``anchor:32+content,stem,dist,nmdf,jaccard``.

        :meth:`parse` reads it back: ``Strategy.parse(s.spec()) == s``.
        """
        parts = []
        for source in self.sources:
            if source is Source.ANCHOR:
                w = str(self.window_size) if self.window is Window.BASIC else self.window.value
                parts.append(f"anchor:{w}")
            else:
                parts.append(source.value)
        tokens = ["+".join(self._with_shares(parts)), self.stemming.value, "dist" if self.distance_weighting else "nodist"]
        tokens.append(self.frequency.value)
        if self.nmdf_mu is not None:
            tokens += [f"mu={self.nmdf_mu!r}", f"sigma={self.nmdf_sigma!r}"]
        if self.normalise_to != 1.0:
            tokens.append(f"norm={self.normalise_to!r}")
        tokens.append(self.metric.value)
        if self.dedup:
            tokens.append("dedup")
        return ",".join(tokens)

    @classmethod
    def parse(cls, spec: str) -> Strategy:
        """Read the compact text form.

        ``SOURCES[,TOKEN…]`` where SOURCES joins ``anchor[:W|:syntactic|:topical]``, ``content``,
        ``links`` (in-link ids; ``inlinks`` is read too) and ``outlinks`` (out-link ids) with ``+``
        (``anchor`` alone means ``anchor:32``), each optionally with its share of the bag's mass
        after ``@`` (all sources or none, summing to 1: ``anchor:32@0.5+outlinks@0.5``), and each TOKEN is a
        stemming (``nostem``, ``stopstem``, ``stem``), ``dist`` or ``nodist``, a frequency
        weighting (``none``, ``binary``, ``log``, ``sqrt``, ``nmdf``), ``mu=X``/``sigma=Y`` (NMDF in ln df
        units), ``norm=C`` (bag sum), a metric (``jaccard``, ``cosine``, ``overlap``) or ``dedup``/``nodedup``
        (collapse near-duplicate pages before indexing). Tokens left out take
        the defaults of :class:`Strategy`. Example: ``anchor:32+content,stem,dist,nmdf``.
        Two tokens that set one thing differently (``stem,nostem``) are refused. The labels the
        evaluation report prints (:attr:`label`, e.g. ``anchor-W32 dist nmdf nostem``) are read too.
        """
        if not isinstance(spec, str) or not spec.strip():
            raise StrategyError(
                f"expected a strategy such as 'anchor:32+content,stem,dist,nmdf', got {spec!r}"
            )
        if _LABEL_HEAD.match(spec.strip()) and "," not in spec and (" " in spec.strip() or "-" in spec):
            spec = _label_to_spec(spec)
        head, *tokens = [t.strip() for t in spec.strip().split(",")]
        fields: dict[str, Any] = {}
        given: dict[str, str] = {}  # field -> the token that set it

        def put(field: str, value: Any, token: str) -> None:
            if field in given and fields[field] != value:
                raise StrategyError(
                    f"{given[field]!r} and {token!r} in {spec!r} contradict each other: both set the "
                    f"{field.replace('_', ' ')}; give one of them"
                )
            given[field] = token
            fields[field] = value

        sources: list[Source] = []
        shares: list[float | None] = []
        for part in head.split("+"):
            body, at, share_text = part.strip().lower().partition("@")
            name, _, arg = body.strip().partition(":")
            name = name.strip()
            source = _SOURCE_ALIASES.get(name) or (Source(name) if name in {s.value for s in Source} else None)
            if source in sources:
                raise StrategyError(f"{part!r} in {spec!r}: the source {name!r} is named twice; name each source once")
            shares.append(_read_share(share_text, part, spec) if at else None)
            if name == "anchor":
                sources.append(Source.ANCHOR)
                if arg in ("syntactic", "topical"):
                    fields["window"] = Window(arg)
                elif arg:
                    if not arg.isdigit():
                        raise StrategyError(
                            f"{part!r}: expected anchor:W with W a number 0…{MAX_WINDOW}, "
                            "anchor:syntactic or anchor:topical"
                        )
                    fields["window"], fields["window_size"] = Window.BASIC, int(arg)
            elif source is not None and not arg:
                sources.append(source)
            else:
                raise StrategyError(
                    f"{part!r} in {spec!r}: expected term sources joined by '+', each 'anchor[:W]', "
                    "'anchor:syntactic', 'anchor:topical', 'content', 'links' or 'outlinks', "
                    "optionally with a share such as '@0.5'"
                )
        fields["sources"] = tuple(sources)
        if any(share is not None for share in shares):
            if any(share is None for share in shares):
                raise StrategyError(
                    f"{head!r} in {spec!r}: expected a share for every source or for none, e.g. "
                    "'anchor:32@0.5+outlinks@0.5'"
                )
            fields["shares"] = tuple(shares)
        for token in tokens:
            low = token.lower()
            key, eq, value = low.partition("=")
            if eq:
                targets = {"mu": "nmdf_mu", "sigma": "nmdf_sigma", "norm": "normalise_to"}
                if key not in targets:
                    raise StrategyError(f"{token!r}: expected mu=X, sigma=Y or norm=C")
                try:
                    number = float(value)
                except ValueError:
                    raise StrategyError(f"{token!r}: expected a number after '{key}='") from None
                put(targets[key], number, token)
            elif low in ("dist", "nodist"):
                put("distance_weighting", low == "dist", token)
            elif low in ("dedup", "nodedup"):
                put("dedup", low == "dedup", token)
            elif low in {s.value for s in Stemming}:
                put("stemming", Stemming(low), token)
            elif low in {f.value for f in Frequency}:
                put("frequency", Frequency(low), token)
            elif low in {m.value for m in Metric}:
                put("metric", Metric(low), token)
            else:
                raise StrategyError(
                    f"{token!r} in {spec!r}: expected a stemming (nostem, stopstem, stem), dist/nodist, "
                    "a frequency weighting (none, binary, log, sqrt, nmdf), mu=, sigma=, norm=, a metric (jaccard, cosine, overlap) "
                    "or dedup/nodedup"
                )
        return cls(**fields)


_LABEL_HEAD = re.compile(r"^(anchor-|content\b|links\b|outlinks\b)", re.IGNORECASE)
_LABEL_NMDF = re.compile(r"^nmdf\(mu=([^,]+),sigma=([^)]+)\)$", re.IGNORECASE)


def _label_to_spec(label: str) -> str:
    """The compact form of a report label (:attr:`Strategy.label`): ``anchor-W32+content dist nmdf
    stem`` → ``anchor:32+content,dist,nmdf,stem``. A label without ``dist`` has no distance
    weighting."""
    head, *words = label.split()
    sources = []
    for part in head.split("+"):
        body, at, share = part.partition("@")
        name, _, arg = body.partition("-")
        if name.lower() == "anchor" and arg[:1].lower() == "w" and arg[1:].isdigit():
            arg = arg[1:]
        sources.append((f"{name}:{arg}" if arg else name) + (f"@{share}" if at else ""))
    tokens = []
    for word in words:
        nmdf = _LABEL_NMDF.match(word)
        tokens += ["nmdf", f"mu={nmdf.group(1)}", f"sigma={nmdf.group(2)}"] if nmdf else [word]
    if "dist" not in (t.lower() for t in tokens):
        tokens.append("nodist")
    return ",".join(["+".join(sources), *tokens])


def _read_share(text: str, part: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise StrategyError(f"{part!r} in {spec!r}: expected a share after '@', a number in (0, 1]") from None


def _canonical_shares(shares: Any, given: list[Source], ordered: tuple[Source, ...]) -> tuple[float, ...] | None:
    """Shares in the canonical source order, checked (see "Source shares" in the module docstring).

    ``shares`` is None, a mapping source → share, or a sequence aligned with the sources as
    ``given``. One source takes the whole bag, so its share (which must be 1) is dropped.
    """
    if shares is None:
        return None
    if isinstance(shares, dict):
        by_source = {_coerce(Source, k, "shares"): v for k, v in shares.items()}
        if set(by_source) != set(ordered):
            raise StrategyError(
                f"shares: expected one share for each source ({', '.join(s.value for s in ordered)}), "
                f"got shares for {', '.join(sorted(s.value for s in by_source)) or 'none'}"
            )
    else:
        values = (shares,) if isinstance(shares, (int, float)) else tuple(shares)
        if len(values) != len(given) or len(set(given)) != len(given):
            raise StrategyError(
                f"shares: expected one share for each of the {len(given)} sources, each source named once, "
                f"got {len(values)} shares for {', '.join(s.value for s in given)}"
            )
        by_source = dict(zip(given, values))
    out = []
    for source in ordered:
        share = by_source[source]
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not math.isfinite(share) \
                or not 0 < share <= 1:
            raise StrategyError(
                f"shares: expected each share in (0, 1], got {share!r} for {source.value!r}; "
                "leave a source out instead of giving it share 0"
            )
        out.append(float(share))
    total = math.fsum(out)
    if abs(total - 1.0) > _SHARE_TOLERANCE:
        raise StrategyError(
            f"shares: expected shares summing to 1 (each source's part of the bag's mass), got "
            f"{' + '.join(f'{x:g}' for x in out)} = {total:g}"
        )
    return None if len(out) == 1 else tuple(out)


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def paper_grid() -> dict[str, tuple[Strategy, ...]]:
    """The strategies behind the paper's Figures 3–9 (Section 5), figure by figure.

    The paper varies one dimension per figure and does not say where it held the others; we
    hold them at a plain baseline — STEM, no distance or frequency weighting, Jaccard — except
    where the paper says otherwise: Figure 5's hybrids all use distance weighting (its
    footnote 12), Figures 7 and 9 are drawn around the best settings (W = 32 with distance
    weighting; Figure 9 also with NMDF). Figure 4 (intra-cluster orthogonality) uses Figure 3's
    strategies; Figure 8 is the NMDF curve itself, not a strategy.
    """
    base = Strategy(sources=(Source.ANCHOR,), stemming=Stemming.STEM, distance_weighting=False,
                    frequency=Frequency.NONE)
    r = dataclasses.replace
    fig3 = tuple(r(base, window_size=w) for w in sorted(PAPER_WINDOWS, reverse=True)) + (
        r(base, window=Window.TOPICAL),
        r(base, window=Window.SYNTACTIC),
        r(base, sources=(Source.CONTENT,)),
        r(base, sources=(Source.LINKS,)),
    )
    dist = r(base, distance_weighting=True)
    fig5 = (
        dist,
        r(dist, sources=(Source.ANCHOR, Source.CONTENT)),
        r(dist, sources=(Source.ANCHOR, Source.CONTENT, Source.LINKS)),
    )
    fig6 = (base, dist, r(base, frequency=Frequency.NMDF), r(dist, frequency=Frequency.NMDF))
    fig7 = tuple(r(dist, frequency=f) for f in (Frequency.NONE, Frequency.LOG, Frequency.SQRT, Frequency.NMDF))
    best = r(dist, frequency=Frequency.NMDF)
    fig9 = tuple(r(best, stemming=s) for s in (Stemming.NOSTEM, Stemming.STOPSTEM, Stemming.STEM))
    return {"figure3": fig3, "figure4": fig3, "figure5": fig5, "figure6": fig6, "figure7": fig7, "figure9": fig9}


def paper_strategies() -> tuple[Strategy, ...]:
    """Every distinct strategy of :func:`paper_grid`, in figure order."""
    seen: dict[Strategy, None] = {}
    for strategies in paper_grid().values():
        for s in strategies:
            seen.setdefault(s, None)
    return tuple(seen)
