"""The evaluation report's pages (tasks/report.py writes them): what they say, block by block, from
one :class:`ReportContext` — the strategies' table, the figures, the findings, the index's agreement,
the recommendation, the method, the sample and the listings (paper Sections 2–5) — and the
blocks as Markdown and as a self-contained HTML page."""
from __future__ import annotations

import base64
import html
import math
from dataclasses import dataclass

from simweb.core.findings import (
    Finding,
    StrategyResult,
    best_first,
)
from simweb.core.gamma import (
    GAMMA_MEASURES,
    ORTHOGONALITY,
    SIBLING_GAMMA,
)
from simweb.core.grids import FIGURE_MEASURE, AnyStrategy, LinkStrategy, figure_label
from simweb.core.index_agreement import INDEX_STRATEGY
from simweb.core.markdown import md_text
from simweb.core.retrieval_metrics import RETRIEVAL_MEASURES, RETRIEVAL_N
from simweb.tasks.report_figures import AXIS_LABELS, FigureFiles

# Ranks shown in the Figure 2-style listing (the paper's own choice).
LISTING_RANKS = (1, 2, 5, 10, 20, 50, 100)


@dataclass(frozen=True, slots=True)
class Ranked:
    """A document at one rank of a source's listing."""

    rank: int
    similarity: float
    url: str
    category: str
    distance: str  # familial distance from the source (Section 2.1)


@dataclass(frozen=True, slots=True)
class Listing:
    """A source's documents at the ranks of LISTING_RANKS under one strategy (paper Figure 2)."""

    strategy: str
    gamma: float | None  # Γ of this source alone
    ranks: tuple[Ranked, ...]


@dataclass(frozen=True, slots=True)
class SourceListings:
    url: str
    category: str
    listings: tuple[Listing, ...]  # the best strategy's, then the worst's


@dataclass(frozen=True, slots=True, eq=False)
class ReportContext:
    """Everything the Markdown and HTML pages show."""

    title: str
    generated: str
    sample: dict  # sample.json of the sample stage
    figures: dict[str, tuple[AnyStrategy, ...]]
    results: dict[AnyStrategy, StrategyResult]
    figure_files: dict[str, FigureFiles]
    listings: list[SourceListings]
    findings: list[Finding]
    index: dict | None  # the index's agreement with exact similarity (simweb.core.index_agreement)
    n_resamples: int
    seed: int
    recommendation: dict | None = None  # tasks/eval_recommend.py, with its index's agreement


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.{digits}f}"


def _interval(est) -> str:
    if math.isnan(est.value):
        return "n/a"
    if math.isnan(est.low):
        return f"{est.value:.3f}"
    return f"{est.value:.3f} [{est.low:.3f}, {est.high:.3f}]"


@dataclass(frozen=True, slots=True)
class Heading:
    text: str


@dataclass(frozen=True, slots=True)
class Bullets:
    lines: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Table:
    headers: list[str]
    rows: list[list[str]]


@dataclass(frozen=True, slots=True)
class Figure:
    files: FigureFiles


@dataclass(frozen=True, slots=True)
class SourceHeading:
    """The source document of a Figure 2-style listing."""

    url: str
    category: str


@dataclass(frozen=True, slots=True)
class Paragraph:
    text: str


#: What a report page is made of, rendered as Markdown or HTML.
Block = Heading | Bullets | Table | Figure | SourceHeading | Paragraph


def _strategy_rows(context: ReportContext) -> Table:
    headers = ["strategy", "sibling-Γ [95% CI]", "cousin-Γ", "unrelated-Γ", "Γ", "orthogonality",
               *(f"{m}@{RETRIEVAL_N}" for m in ("P", "R", "F", "AP", "Δ")), "with bag", "seconds"]
    rows = []
    for r in best_first(context.results):
        n = r.stats.get("sample") or 0
        rows.append([
            r.strategy.label,
            _interval(r.estimates[SIBLING_GAMMA]),
            _interval(r.estimates["cousin_gamma"]),
            _interval(r.estimates["unrelated_gamma"]),
            _interval(r.estimates["gamma"]),
            _interval(r.estimates[ORTHOGONALITY]),
            *(_fmt(r.estimates[m].value) if m in r.estimates else "n/a" for m in RETRIEVAL_MEASURES),
            f"{r.stats.get('with_bag', 0)}/{n}",
            _fmt(r.stats.get("seconds"), 2),
        ])
    return Table(headers, rows)


def _figure_rows(context: ReportContext, figure: str) -> Table:
    measure = FIGURE_MEASURE.get(figure, SIBLING_GAMMA)
    rows = []
    for s in dict.fromkeys(context.figures[figure]):
        r = context.results.get(s)
        if r is not None:
            rows.append([figure_label(figure, s), _interval(r.estimates[measure]), s.label])
    return Table(["setting", AXIS_LABELS.get(measure, measure) + " [95% CI]", "strategy"], rows)


RETRIEVAL_TITLE = f"Top-{RETRIEVAL_N} results against the directory classes (lecture measures; Δ of the ENS paper)"


def _retrieval_rows(context: ReportContext) -> Table:
    rows = []
    for r in best_first(context.results):
        if any(m in r.estimates for m in RETRIEVAL_MEASURES):
            rows.append([r.strategy.label, *(_interval(r.estimates[m]) if m in r.estimates else "n/a"
                                             for m in RETRIEVAL_MEASURES)])
    headers = ["strategy", *(f"{m}@{RETRIEVAL_N} [95% CI]" for m in ("precision", "recall", "F",
                                                                    "average precision", "Δ"))]
    return Table(headers, rows)


def _finding_rows(context: ReportContext) -> Table:
    rows = []
    for f in context.findings:
        ci = "n/a" if f.low is None else f"{_fmt(f.advantage)} [{_fmt(f.low)}, {_fmt(f.high)}]"
        rows.append([f.claim, f.verdict, f.detail, ci])
    return Table(["paper's finding (Section 5)", "on this crawl", "measured", "advantage [95% CI]"], rows)


def _listing_rows(listing: Listing) -> Table:
    rows = [[str(r.rank), f"{r.similarity:.3f}", r.category, r.distance, r.url] for r in listing.ranks]
    return Table(["rank", "sim", "category", "familial distance", "url"], rows)


def _index_rows(index: dict) -> Table:
    rows = []
    for measure in GAMMA_MEASURES:
        rows.append([measure.replace("_", "-").replace("gamma", "Γ"), _fmt(index["gamma_exact"].get(measure)),
                     _fmt(index["gamma_estimate"].get(measure))])
    return Table(["measure", "exact Jaccard", f"min-hash estimate (m = {index['m']})"], rows)


def _index_lines(index: dict) -> list[str]:
    """The agreement in words: both query paths, what the re-rank costs, why the paper's path misses pairs."""
    est, rr, miss = index["estimate"], index["rerank"], index["misses"]
    kept = ("every document in I" if index["min_in_degree"] is None
            else f"I without the documents of in-degree ≤ {index['min_in_degree']} "
                 f"({index['documents'] - index['indexed_documents']:,} of {index['documents']:,} here)")
    return [
        f"Strategy {index['strategy']}: m = {index['m']} {index['algorithm']} min-hash signatures per bag (seed "
        f"{index['seed']}), α = {index['alpha']}, {kept}; {index['relevant_pairs']:,} pairs of the sample have exact "
        "Jaccard ≥ α.",
        f"The index's queries (candidates estimated ≥ α − {index['rerank_sigmas']:g}σ = {_fmt(rr['candidate_alpha'])}, "
        f"kept when their exact Jaccard from the stored bags is ≥ α): recall {_fmt(rr['recall'])}, precision "
        f"{_fmt(rr['precision'])}; {_fmt(rr['candidates_per_query'], 1)} candidates re-ranked per query for "
        f"{_fmt(rr['results_per_query'], 1)} results.",
        f"The paper's PROCESSQUERY (estimate ≥ α, `--no-rerank`): recall {_fmt(est['recall'])}, precision "
        f"{_fmt(est['precision'])} ({est['retrieved_pairs']:,} pairs retrieved); mean absolute error of the estimates "
        f"{_fmt(index['mean_abs_error'], 4)}.",
        f"Why PROCESSQUERY misses pairs: of its {miss['pairs']:,} misses, {miss['within_sigma_of_alpha']:,} have exact "
        f"Jaccard within σ = {_fmt(miss['sigma'])} of α (the estimate's noise; their median exact Jaccard "
        f"{_fmt(miss['median_exact'])}) and {miss['both_out_of_i']:,} have both documents out of I; "
        f"{index['relevant_within_sigma_of_alpha']:,} of all {index['relevant_pairs']:,} pairs ≥ α lie within σ of α.",
    ]


def _recommendation_lines(context: ReportContext) -> list[str]:
    rec = context.recommendation

    def value(entry: dict) -> str:
        est = entry["sibling_gamma"]
        shown = _fmt(est["value"]) if est["low"] is None else f"{_fmt(est['value'])} [{_fmt(est['low'])}, {_fmt(est['high'])}]"
        held = entry.get("held_out")
        held = held if held is None or not isinstance(held, dict) else held["value"]
        return f"{shown} on the whole sample, {_fmt(held)} on the held-out halves"

    lines = [f"Build the index with `{rec['spec']}` ({rec['strategy']}): `simweb build CRAWL --out INDEX "
             "--strategy-from REPORT`, REPORT being this report's folder."]
    cv = rec.get("cross_validation") or {}
    held = rec.get("held_out")
    kept = rec.get("kept_default")
    if kept:
        lines.append(
            f"Keep the default: the strategy of best sibling-Γ chosen on half of the classes and scored on the other "
            f"half scores {_fmt(kept['held_out']['value'])} [{_fmt(kept['held_out']['low'])}, "
            f"{_fmt(kept['held_out']['high'])}] ({kept['strategy']} on the whole sample, {cv['folds']} folds), below "
            f"the Section 7 strategy's {_fmt(kept['default_held_out'])} on the same held-out halves: choosing by "
            "sibling-Γ gains nothing on this crawl, so the recommendation is the Section 7 strategy.")
    elif held is None:
        lines.append(f"Not cross-validated: {cv.get('reason', 'no classes to hold out')}. Whole-sample sibling-Γ "
                     f"{_fmt(rec['sibling_gamma']['value'])} (inflated by the choice).")
    else:
        lines.append(
            f"Cross-validated sibling-Γ {_fmt(held['value'])} [{_fmt(held['low'])}, {_fmt(held['high'])}]: the "
            f"indexable strategy of best sibling-Γ (among {cv['candidates']}) chosen on half of the classes (the "
            f"{cv['units']} sampled pairs of sibling classes, each kept together) and scored on the pairs of "
            f"documents of the other half's classes only; {cv['folds']} folds ({cv['splits']} random halvings, seed "
            f"{cv['seed']}); interval: {cv['n_resamples']} bootstrap resamples of the pairs of classes, the whole "
            f"procedure repeated on each. On the whole sample it scores {_fmt(rec['sibling_gamma']['value'])}, a "
            "value its choice inflates.")
        chosen = ", ".join(f"{c['strategy']} ({c['folds']})" for c in cv.get("chosen_in_folds", []))
        lines.append(f"Chosen in the folds: {chosen}.")
        families = rec.get("held_out_families")
        if families:
            refs = "; ".join(f"{k} {_fmt(v)}" for k, v in families["references"].items())
            lines.append(
                f"Held out by whole families instead ({families['units']} second-level classes: does the choice "
                f"carry over to other parts of the directory?): {_fmt(families['value'])} [{_fmt(families['low'])}, "
                f"{_fmt(families['high'])}]; on the same halves {refs}.")
    for key, name in (("section7", "The paper's Section 7 strategy"), ("best_single", "The best single strategy"),
                      ("best_indexable_single", "The best single strategy an index can be built with")):
        entry = rec.get(key)
        if entry is not None:
            lines.append(f"{name}, {entry['strategy']}: {value(entry)} (held-out value as if chosen in advance); "
                         f"it orders {_fmt(entry['ordered_pairs'])} of the same-class/sibling-class pairs.")
    lines.append(f"The recommended strategy orders {_fmt(rec['ordered_pairs'])} of those pairs (Γ leaves ties out, "
                 "footnote 4).")
    return lines


def _method_lines(context: ReportContext) -> list[str]:
    params = context.sample.get("params", {})
    lines = [
        "Ground truth: the directory collapsed to depth 3; familial distance same / sibling / cousin / "
        "unrelated (Section 2.1). Every sampled document is a source; Γ sums concordant and discordant "
        "pairs over all sources, similarity ties excluded (Section 2.3).",
        f"Sample: seed {params.get('seed')}, {params.get('n_pairs')} pairs of sibling third-level classes "
        f"requested, at least {params.get('min_pages')} linked-to URLs per class"
        + (f", at most {params['max_pages_per_class']} per class" if params.get("max_pages_per_class") else "")
        + ".",
        "Similarity: exact bag Jaccard (or cosine where named) on every pair of the sample; a document "
        "without a bag under a strategy (e.g. a page that was linked to but not crawled, for contents) is "
        "similar to nothing, so its same-class pairs count as orthogonal and its comparisons are ties.",
        f"Intervals: 95% percentile bootstrap over the sampled classes ({context.n_resamples} resamples, "
        f"seed {context.seed}); differences use a paired bootstrap (the same resampled classes for both).",
        f"Top-{RETRIEVAL_N} measures: every sampled page is a query, the rest of the sample its candidates; its "
        f"top {RETRIEVAL_N} are the most similar candidates with a positive similarity (ties to the earlier "
        f"sample page). Precision, recall, F and interpolated average precision (lecture notes) count the other "
        f"pages of the query's class as relevant, precision dividing by {RETRIEVAL_N}; Δ (ENS Section 4.2) "
        f"averages the TF-IDF cosine of the query's page contents with each result's, divided by {RETRIEVAL_N} "
        "(a page that was not crawled has no contents: cosine 0).",
    ]
    if any(isinstance(s, LinkStrategy) for s in context.results):
        lines.append(
            "Link measures (ENS Sections 3.2–3.4, Table 1 parameters: ECBC α = 0.5; SimRank and extended "
            "SimRank γ = 0.8, 10 iterations; PageSim r = 3, d = 0.5; extended PageSim r = 3, d = 0.6; PageRank "
            "teleport 0.1) on the crawl's link graph without the directory's own pages' links; a sampled page "
            "no kept link touches is similar to nothing. PageRank is a query-independent baseline: every "
            "query ranks the candidates by their PageRank.")
    return lines


def _sample_lines(context: ReportContext) -> list[str]:
    info = context.sample
    lines = list(info.get("description_lines", []))
    crawl = info.get("crawl_counts", {})
    d = info.get("directory_counts", {})
    lines.append(
        f"crawl: {crawl.get('pages', 0):,} pages, {crawl.get('links', 0):,} links "
        f"({crawl.get('links_from_directory_pages', 0):,} from the directory's own pages, dropped); "
        f"{crawl.get('linked_urls', 0):,} distinct URLs linked to"
    )
    lines.append(
        f"directory: {d.get('listings', 0):,} listings; {d.get('urls', 0):,} linked-to URLs classified into "
        f"{d.get('classes', 0):,} classes; ignored: {d.get('above_depth', 0):,} above depth 3, "
        f"{d.get('soft_link', 0):,} soft links, {d.get('directory_page', 0):,} directory pages, "
        f"{d.get('conflicting_class', 0):,} URLs in two classes, {d.get('bad_url', 0):,} bad URLs, "
        f"{d.get('not_kept', 0):,} not linked to by the crawl"
        + (f"; {d['url_without_scheme']:,} URLs written without their scheme (www.example.org/page) matched "
           "over http or https, as the crawl has them" if d.get("url_without_scheme") else "")
    )
    repairs = [f"{d[key]:,} {what}" for key, what in (
        ("bare_ampersands_escaped", "bare '&' escaped"), ("forbidden_characters_dropped", "control characters dropped"),
        ("bytes_not_utf8_replaced", "bytes that are not UTF-8 replaced")) if d.get(key)]
    if repairs:
        lines.append("directory file repaired to read as XML (as dumps of the Open Directory's early years need): "
                     + ", ".join(repairs))
    tsv = [f"{d[key]:,} {what}" for key, what in (
        ("tsv_extra_columns", "with columns beyond url and category (ignored)"),
        ("tsv_category_first", "with the category before the URL (read so)"),
        ("bad_tsv_line", "skipped: not url<TAB>category, or not UTF-8")) if d.get(key)]
    if tsv:
        lines.append(f"directory TSV: {d.get('tsv_lines', 0):,} lines read; lines " + "; ".join(tsv))
    return lines


def report_blocks(context: ReportContext) -> list[Block]:
    """The body of the report, in order, for either page."""
    blocks: list[Block] = [Heading("Sample"), Bullets(tuple(_sample_lines(context))),
                           Heading("Method"), Bullets(tuple(_method_lines(context))),
                           Heading("Strategies, best sibling-Γ first"), _strategy_rows(context)]
    retrieval = _retrieval_rows(context)
    if retrieval.rows:
        blocks += [Heading(RETRIEVAL_TITLE), retrieval]
    if context.findings:
        blocks += [Heading("The paper's findings on this crawl"), _finding_rows(context)]
    for figure, files in context.figure_files.items():
        blocks += [Heading(files.title), Figure(files)]
        if figure in context.figures:
            blocks.append(_figure_rows(context, figure))
    if context.recommendation:
        blocks += [Heading("Recommended strategy (cross-validated over directory classes)"),
                   Bullets(tuple(_recommendation_lines(context)))]
    agreements = [context.index]
    if context.recommendation and context.recommendation.get("index") \
            and context.recommendation["spec"] != INDEX_STRATEGY.spec():
        agreements.append(context.recommendation["index"])
    agreements = [a for a in agreements if a]
    if agreements:
        blocks.append(Heading("The min-hash index against exact similarity (Section 6)"))
        for agreement in agreements:
            blocks += [Bullets(tuple(_index_lines(agreement))), _index_rows(agreement)]
    if context.listings:
        blocks.append(Heading("Ranked listings (as in the paper's Figure 2): best and worst strategy"))
        for entry in context.listings:
            blocks.append(SourceHeading(entry.url, entry.category))
            for listing in entry.listings:
                blocks += [Paragraph(f"{listing.strategy}: Γ for this source = {_fmt(listing.gamma, 2)}"),
                           _listing_rows(listing)]
    return blocks


def _md_row(cells: list[str]) -> str:
    # Cells hold crawled text (URLs, categories): text, never markup (simweb.core.markdown).
    return "| " + " | ".join(md_text(c) for c in cells) + " |"


def _markdown(block: Block) -> str:
    match block:
        case Heading(text):
            return f"## {text}\n"
        case Bullets(lines):
            return "".join(f"- {line}\n" for line in lines)
        case Table(headers, rows):
            lines = [_md_row(headers), "|" + "---|" * len(headers), *map(_md_row, rows)]
            return "\n".join(lines) + "\n"
        case Figure(files):
            return f"![{files.title}]({files.png})\n"
        case SourceHeading(url, category):
            return f"Source {md_text(url)} ({md_text(category)})\n"
        case Paragraph(text):
            return f"{md_text(text)}\n"
    raise TypeError(f"no Markdown for {type(block).__name__}")


def markdown_page(context: ReportContext) -> str:
    """The report as Markdown (summary.md): blocks separated by a blank line."""
    head = [f"# {context.title}\n", f"Generated {context.generated}.\n"]
    return "\n".join(head + [_markdown(block) for block in report_blocks(context)])


def _html(block: Block) -> str:
    h = html.escape
    match block:
        case Heading(text):
            return f"<h2>{h(text, quote=False)}</h2>"
        case Bullets(lines):
            return "<ul>" + "".join(f"<li>{h(line)}</li>" for line in lines) + "</ul>"
        case Table(headers, rows):
            head = "".join(f"<th>{h(c)}</th>" for c in headers)
            body = "".join("<tr>" + "".join(f"<td>{h(str(c))}</td>" for c in row) + "</tr>" for row in rows)
            return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>\n"
        case Figure(files):
            data = base64.b64encode(files.svg_bytes).decode("ascii")
            return f"<img alt=\"{h(files.title)}\" src=\"data:image/svg+xml;base64,{data}\">"
        case SourceHeading(url, category):
            return f"<h3>Source {h(url)} <small>({h(category)})</small></h3>"
        case Paragraph(text):
            return f"<p>{h(text)}</p>"
    raise TypeError(f"no HTML for {type(block).__name__}")


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:0.8em 0;font-size:0.88em}
th,td{border:1px solid #ccc;padding:0.25em 0.55em;text-align:left;vertical-align:top}
th{background:#f2f2f2} img{max-width:100%;border:1px solid #eee} h2{margin-top:1.6em;border-bottom:1px solid #ddd}
.note{color:#555;font-size:0.9em}
"""


def html_page(context: ReportContext) -> str:
    """The report as one self-contained HTML page (report.html): every figure embedded as SVG."""
    h = html.escape
    head = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{h(context.title)}</title>"
            f"<style>{_CSS}</style></head><body>"
            f"<h1>{h(context.title)}</h1><p class=\"note\">Generated {h(context.generated)}. "
            "Self-contained: every figure is embedded.</p>")
    return head + "".join(_html(block) for block in report_blocks(context)) + "</body></html>\n"
