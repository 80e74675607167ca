"""The report's figures: the paper's Figures 3–9 drawn for this crawl, PNG and SVG (paper Section 5).

One bar chart per figure of the grid — each strategy's sibling-Γ (Figure 4: intra-cluster
orthogonality) with its bootstrap interval — and Figure 8, the NMDF curve fitted to this crawl
(Section 3.3). Drawn with matplotlib's object API (no pyplot state, no GUI backend); SVGs are
written without a date, so a re-run draws the same file.

One y-axis convention for every bar figure: bars start at zero (a bar's length is its value),
and all figures of one measure share one scale (:func:`shared_ranges`), so that a bar of
Figure 3 and a bar of Figure 9 compare by eye.
"""
from __future__ import annotations

import io
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from simweb.core.findings import StrategyResult
from simweb.core.gamma import ORTHOGONALITY, SIBLING_GAMMA, Estimate
from simweb.core.grids import FIGURE_MEASURE, AnyStrategy, figure_label
from simweb.core.weighting import nmdf_factor
from simweb.tasks.storage import join, write_bytes_atomic

__all__ = ["AXIS_LABELS", "FIGURE_TITLES", "FigureFiles", "draw_figures"]

FIGURE_TITLES = {
    "figure3": "Figure 3 — Document representations: sibling-Γ",
    "figure4": "Figure 4 — Intra-cluster orthogonality",
    "figure5": "Figure 5 — Hybrid bag types: sibling-Γ",
    "figure6": "Figure 6 — Term weighting: sibling-Γ",
    "figure7": "Figure 7 — Frequency weighting: sibling-Γ",
    "figure8": "Figure 8 — The NMDF weight of a term by its document frequency",
    "figure9": "Figure 9 — Stemming variants: sibling-Γ",
    "metric": "Jaccard vs cosine: sibling-Γ",
    "links": "Link-based measures (ENS paper) beside anchor windows: sibling-Γ",
    "sources": "Each term source alone (Section 7 settings): sibling-Γ",
    "shares": "Source shares: sibling-Γ",
    "overlap": "Bags compared by overlap (Σ min, not normalised): sibling-Γ",
}
AXIS_LABELS = {SIBLING_GAMMA: "Sibling Γ", ORTHOGONALITY: "Fraction of pairs that are orthogonal"}


@dataclass(frozen=True, slots=True)
class FigureFiles:
    """A drawn figure: its PNG and SVG paths relative to the report folder, the SVG's bytes
    (embedded in the HTML page) and its title."""

    png: str
    svg: str
    svg_bytes: bytes
    title: str


def draw_figures(out: str, figures: Mapping[str, tuple[AnyStrategy, ...]],
                 results: Mapping[AnyStrategy, StrategyResult]) -> dict[str, FigureFiles]:
    """PNG and SVG of every figure of the grid (and Figure 8 when NMDF was evaluated) under
    ``out/figures``, in figure order."""
    drawn: dict[str, FigureFiles] = {}
    bars = {}
    for figure, strategies in figures.items():
        present = [results[s] for s in dict.fromkeys(strategies) if s in results]
        if present:
            measure = FIGURE_MEASURE.get(figure, SIBLING_GAMMA)
            bars[figure] = (measure, [figure_label(figure, r.strategy) for r in present],
                            [r.estimates[measure] for r in present])
    ranges = shared_ranges([(measure, estimates) for measure, _, estimates in bars.values()])
    for figure, (measure, labels, estimates) in bars.items():
        drawn[figure] = _save(out, figure, _bar_figure(FIGURE_TITLES.get(figure, figure), labels, estimates,
                                                       measure, ranges[measure]))
    # Figure 8: the NMDF curve fitted for this crawl, preferably that of Figure 7's NMDF strategy.
    nmdf = [r for r in results.values() if (r.stats.get("weighting") or {}).get("nmdf_mu") is not None]
    nmdf.sort(key=lambda r: r.strategy not in figures.get("figure7", ()))
    if nmdf:
        weighting = nmdf[0].stats["weighting"]
        drawn["figure8"] = _save(out, "figure8", _nmdf_figure(weighting["nmdf_mu"], weighting["nmdf_sigma"],
                                                              nmdf[0].strategy.label))
    return dict(sorted(drawn.items(), key=lambda kv: _figure_order(kv[0])))


def _figure_order(name: str) -> tuple[int, str]:
    digits = "".join(ch for ch in name if ch.isdigit())
    return (int(digits) if digits else 99, name)


def _new_figure(width: float = 6.4, height: float = 3.8):
    from matplotlib.figure import Figure  # the object API: no pyplot state, no GUI backend

    fig = Figure(figsize=(width, height), dpi=110)
    return fig, fig.add_subplot(1, 1, 1)


def shared_ranges(figures: list[tuple[str, list[Estimate]]]) -> dict[str, tuple[float, float]]:
    """The y-axis range of each measure's bar figures: from zero (or the lowest interval end,
    when one is negative) to a little above the highest interval end of all its figures, at
    most 1 (Γ and orthogonality are at most 1)."""
    ends: dict[str, list[float]] = {}
    for measure, estimates in figures:
        ends.setdefault(measure, []).extend(
            x for e in estimates for x in (e.value, e.low, e.high) if x is not None and math.isfinite(x))
    ranges = {}
    for measure, values in ends.items():
        lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
        bottom = min(0.0, lo)
        top = max(hi, 0.0) + 0.12 * max(max(hi, 0.0) - bottom, 0.05)
        ranges[measure] = (bottom, min(top, 1.05))
    return ranges


def _bar_figure(title: str, labels: list[str], estimates: list[Estimate], measure: str,
                y_range: tuple[float, float]):
    fig, ax = _new_figure(max(5.0, 0.85 * len(labels) + 2.0))
    values = np.array([e.value for e in estimates], dtype=float)
    low = np.array([e.low for e in estimates], dtype=float)
    high = np.array([e.high for e in estimates], dtype=float)
    x = np.arange(len(labels))
    shown = np.nan_to_num(values)
    err = np.vstack([np.nan_to_num(shown - low), np.nan_to_num(high - shown)])
    err = np.clip(err, 0, None)
    ax.bar(x, shown, color="#4e79a7", yerr=err, capsize=4, ecolor="#333333")
    for xi, v, h in zip(x, values, high):
        at = 0.0 if math.isnan(v) else (h if not math.isnan(h) else v)
        ax.annotate("n/a" if math.isnan(v) else f"{v:.3f}", (xi, max(at, v if not math.isnan(v) else 0.0)),
                    textcoords="offset points", xytext=(0, 4), ha="center", fontsize=8)
    slanted = max(map(len, labels)) > 8
    ax.set_xticks(x, labels, rotation=20 if slanted else 0, ha="right" if slanted else "center", fontsize=8)
    ax.set_ylabel(AXIS_LABELS.get(measure, measure))
    ax.set_title(title, fontsize=10)
    ax.set_ylim(*y_range)
    ax.axhline(0.0, color="#333333", linewidth=0.8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    return fig


def _nmdf_figure(mu: float, sigma: float, label: str):
    fig, ax = _new_figure()
    top = max(1e4, math.exp(mu + 3 * sigma))
    df = np.logspace(0, math.log10(top), 400)
    ax.plot(df, nmdf_factor(df, mu, sigma), color="#e15759")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.2)
    ax.set_xlabel("Document Frequency")
    ax.set_ylabel("Term Weight")
    ax.set_title(f"{FIGURE_TITLES['figure8']}\nμ = {mu:.2f} (df ≈ {math.exp(mu):.0f}), σ = {sigma:.2f} "
                 f"(natural log), fitted to this crawl for {label}", fontsize=9)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig


def _save(out: str, name: str, fig) -> FigureFiles:
    files = {}
    for fmt in ("png", "svg"):
        buffer = io.BytesIO()
        fig.savefig(buffer, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
        write_bytes_atomic(buffer.getvalue(), join(out, "figures", f"{name}.{fmt}"))
        files[fmt] = buffer.getvalue()
    return FigureFiles(f"figures/{name}.png", f"figures/{name}.svg", files["svg"], FIGURE_TITLES.get(name, name))
