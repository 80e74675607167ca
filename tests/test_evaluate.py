"""The evaluation end to end on a synthetic crawl: WARC written with warcio, ingested, judged.

The crawl's anchor text and page contents correlate with the directory's classes, while the
hub pages link to targets at random; so anchor and content strategies must score a clearly
positive Γ and the pure link strategy (co-citation by random hubs) a Γ near 0. A set of
directory pages links to every target with its class name as anchor text: the evaluation must
drop them (paper Section 5, footnote 8), or they would leak the answer.
"""
from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from simweb.core.gamma import class_codes, gammas, pair_counts
from simweb.core.grids import figure_label, strategy_grid
from simweb.core.strategy import Source, Strategy, Window
from simweb.tasks.crawl.corpus import load_corpus
from simweb.tasks.evaluate import run_evaluation, strategy_groups
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.stages.eval_sample import EmptySample, SampleParams, load_sample, prepare_sample
from simweb.tasks.stages.eval_strategies import evaluate_group

TOPS = ("science", "arts", "sports")
SUBS = 2
LEAVES = 4
TARGETS_PER_CLASS = 6
HUBS = 60
LINKS_PER_HUB = 20
LEAK_WORD = "zqxdirectoryleak"


def _words(rng: np.random.Generator, count: int, used: set[str]) -> list[str]:
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    out = []
    while len(out) < count:
        word = "".join(rng.choice(list(consonants)) + rng.choice(list(vowels)) for _ in range(3)) + "x"
        if word not in used:
            used.add(word)
            out.append(word)
    return out


def _page(title: str, body: str) -> bytes:
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def build_synthetic_crawl(root: Path, seed: int = 7) -> dict:
    """A WARC of targets, hubs and directory pages; the directory as TSV and RDF; the
    directory's own pages listed one per line. Returns paths and facts for the tests."""
    rng = np.random.default_rng(seed)
    used: set[str] = set()
    noise = _words(rng, 300, used)
    classes, vocab = [], {}
    for top in TOPS:
        vocab[(top,)] = _words(rng, 6, used)
        for s in range(SUBS):
            sub = f"{top}_sub{'ab'[s]}"
            vocab[(top, sub)] = _words(rng, 6, used)
            for leaf_i in range(LEAVES):
                leaf = f"{sub}_leaf{'abcd'[leaf_i]}"
                vocab[(top, sub, leaf)] = _words(rng, 8, used)
                classes.append((top, sub, leaf))

    def topical(cls, n, share):
        out = []
        for _ in range(n):
            r = rng.random()
            if r < share * 0.7:
                out.append(rng.choice(vocab[cls]))
            elif r < share * 0.9:
                out.append(rng.choice(vocab[cls[:2]]))
            elif r < share:
                out.append(rng.choice(vocab[cls[:1]]))
            else:
                out.append(rng.choice(noise))
        return out

    records = []
    targets = []
    for cls in classes:
        for i in range(TARGETS_PER_CLASS):
            url = f"http://{cls[0]}.example/{cls[1]}/{cls[2]}/page{'abcdefgh'[i]}.html"
            targets.append((url, cls))
            title = " ".join(rng.choice(noise, 2))  # like "Home page": titles say little
            records.append((url, _page(title, "<p>" + " ".join(topical(cls, 40, 0.35)) + "</p>")))
    order = rng.permutation(len(targets)).tolist()
    for h in range(HUBS):
        picks = [order[(h * LINKS_PER_HUB + k) % len(targets)] for k in range(LINKS_PER_HUB)]
        paragraphs = []
        for t in picks:
            url, cls = targets[t]
            anchor = " ".join(topical(cls, 1, 0.3))  # anchors are short and often uninformative
            left, right = " ".join(topical(cls, 8, 0.4)), " ".join(topical(cls, 8, 0.4))
            paragraphs.append(f"<p>{left} <a href=\"{url}\">{anchor}</a> {right}</p>")
        records.append((f"http://hub{h}.example/links.html", _page(f"hub {rng.choice(noise)}", "".join(paragraphs))))
    directory_pages = []
    for cls in classes:
        url = f"http://dir.example/{'/'.join(cls)}.html"
        directory_pages.append(url)
        body = "".join(f'<li><a href="{t}">{LEAK_WORD} {" ".join(cls)}</a></li>'
                       for t, c in targets if c == cls)
        records.append((url, _page(" ".join(cls), f"<ul>{body}</ul>")))

    root.mkdir(parents=True, exist_ok=True)
    warc = root / "synthetic.warc.gz"
    with open(warc, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, payload in records:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8")], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(payload),
                                                          http_headers=headers))
    crawl = root / "crawl"
    ingest_files([str(warc)], str(crawl))

    tsv_lines = [f"{url}\tTop/{'/'.join(cls)}" for url, cls in targets]
    tsv_lines.append("http://science.example/overview.html\tTop/science")  # above depth 3: ignored
    tsv_lines.append("http://arts.example/alias.html\tTop/arts/arts_suba@/x")  # soft link: ignored
    (root / "directory.tsv").write_text("\n".join(tsv_lines) + "\n")
    (root / "directory_pages.txt").write_text("# the directory's own pages\n" + "\n".join(directory_pages) + "\n")
    rdf = ['<?xml version="1.0" encoding="UTF-8"?>\n<RDF xmlns:r="http://www.w3.org/TR/RDF/" '
           'xmlns:d="http://purl.org/dc/elements/1.0/" xmlns="http://dmoz.org/rdf/">\n<Topic r:id=""><catid>1</catid></Topic>\n']
    for cls in classes:
        topic = "Top/" + "/".join(cls)
        members = [u for u, c in targets if c == cls]
        rdf.append(f'<Topic r:id="{topic}"><catid>2</catid>'
                   + "".join(f'<link r:resource="{u}"></link>' for u in members) + "</Topic>\n")
        rdf += [f'<ExternalPage about="{u}"><d:Title>t</d:Title><priority>1</priority><topic>{topic}</topic>'
                "</ExternalPage>\n" for u in members]
    rdf.append("</RDF>\n")
    (root / "directory.rdf").write_text("".join(rdf))
    return {"root": root, "crawl": str(crawl), "tsv": str(root / "directory.tsv"), "rdf": str(root / "directory.rdf"),
            "directory_pages": str(root / "directory_pages.txt"), "targets": targets, "classes": classes,
            "directory_links": sum(TARGETS_PER_CLASS for _ in classes)}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> dict:
    return build_synthetic_crawl(tmp_path_factory.mktemp("synthetic"))


@pytest.fixture(scope="module")
def report(synthetic, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("report")
    summary = run_evaluation(synthetic["crawl"], synthetic["tsv"], str(out), grid="quick",
                             directory_pages=synthetic["directory_pages"], n_resamples=300,
                             sample_params=SampleParams(seed=3))
    return {"out": out, "summary": summary}


def test_sample_covers_every_sibling_pair_and_drops_directory_links(synthetic, tmp_path):
    sample = prepare_sample(synthetic["crawl"], synthetic["tsv"], str(tmp_path), SampleParams(seed=1),
                            synthetic["directory_pages"])
    loaded = load_sample(sample.path)
    # 3 tops × 2 subs with 4 leaves each: 2 disjoint sibling pairs per sub = 12 pairs, every class used.
    assert sample.stats == {"urls": 144, "classes": 24, "pairs": 12}
    assert len(loaded.urls) == 144
    info = loaded.info
    assert info["crawl_counts"]["links_from_directory_pages"] == synthetic["directory_links"]
    assert info["directory_counts"]["above_depth"] == 1
    assert info["directory_counts"]["soft_link"] == 1
    assert info["description"]["documents_per_distance"][0] == 144 * 5  # 6 pages a class
    assert len(info["excluded_pages"]) == 24
    assert len(info["showcase"]) == 3


def test_rdf_and_tsv_give_the_same_sample(synthetic, tmp_path):
    a = prepare_sample(synthetic["crawl"], synthetic["tsv"], str(tmp_path / "a"), SampleParams(seed=5, n_pairs=4),
                       synthetic["directory_pages"])
    b = prepare_sample(synthetic["crawl"], synthetic["rdf"], str(tmp_path / "b"), SampleParams(seed=5, n_pairs=4),
                       synthetic["directory_pages"])
    assert load_sample(a.path).urls == load_sample(b.path).urls
    assert len(load_sample(a.path).urls) == 4 * 2 * TARGETS_PER_CLASS


def test_a_directory_dump_that_is_not_well_formed_gives_the_same_sample(synthetic, tmp_path):
    """The RDF written as dumps of the paper's years were: a listed URL with a bare "&", a title
    with a form feed and a Latin-1 byte. The same sample as the well-formed file, the repairs
    counted and said in the report's sample section."""
    from types import SimpleNamespace

    from simweb.tasks.report_pages import _sample_lines

    text = Path(synthetic["rdf"]).read_bytes()
    text = text.replace(b"<d:Title>t</d:Title>", b"<d:Title>t\x0c\xe9</d:Title>", 1)
    text = text.replace(b"</RDF>", b'<Topic r:id="Top/arts/x/y"><link r:resource="http://z.example/?a=1&b=2"/></Topic>'
                                   b"</RDF>")
    old = tmp_path / "old.rdf"
    old.write_bytes(text)
    params = SampleParams(seed=5, n_pairs=4)
    a = prepare_sample(synthetic["crawl"], synthetic["rdf"], str(tmp_path / "a"), params, synthetic["directory_pages"])
    b = prepare_sample(synthetic["crawl"], str(old), str(tmp_path / "b"), params, synthetic["directory_pages"])
    assert load_sample(b.path).urls == load_sample(a.path).urls
    counts = load_sample(b.path).info["directory_counts"]
    assert (counts["bare_ampersands_escaped"], counts["forbidden_characters_dropped"],
            counts["bytes_not_utf8_replaced"]) == (1, 1, 1)
    lines = _sample_lines(SimpleNamespace(sample=load_sample(b.path).info))
    assert lines[-1] == ("directory file repaired to read as XML (as dumps of the Open Directory's early years "
                         "need): 1 bare '&' escaped, 1 control characters dropped, 1 bytes that are not UTF-8 replaced")
    assert "repaired" not in " ".join(_sample_lines(SimpleNamespace(sample=load_sample(a.path).info)))


def test_a_tsv_export_with_more_columns_and_the_category_first_samples_as_the_plain_tsv(synthetic, tmp_path):
    """The synthetic directory as a spreadsheet exports it: category first, a title column after
    the URL, and a line that is no listing. The same sample as the url<TAB>category file, and the
    report's sample section says how its lines were read."""
    from types import SimpleNamespace

    from simweb.tasks.report_pages import _sample_lines

    exported = ["category\turl\ttitle"]  # a header: neither field names a scheme
    for line in Path(synthetic["tsv"]).read_text().splitlines():
        url, topic = line.split("\t")
        exported.append(f"{topic}\t{url}\tA page about {topic.rsplit('/', 1)[-1]}")
    exported.append("a note, not a listing")
    export = tmp_path / "export.tsv"
    export.write_text("\n".join(exported) + "\n")
    params = SampleParams(seed=5, n_pairs=4)
    a = prepare_sample(synthetic["crawl"], synthetic["tsv"], str(tmp_path / "a"), params, synthetic["directory_pages"])
    b = prepare_sample(synthetic["crawl"], str(export), str(tmp_path / "b"), params, synthetic["directory_pages"])
    assert load_sample(b.path).urls == load_sample(a.path).urls
    n = len(exported) - 2
    lines = _sample_lines(SimpleNamespace(sample=load_sample(b.path).info))
    assert lines[-1] == (f"directory TSV: {n + 1:,} lines read; lines {n + 1:,} with columns beyond url and category "
                         f"(ignored); {n:,} with the category before the URL (read so); 1 skipped: not url<TAB>category, "
                         "or not UTF-8")
    assert "directory TSV" not in " ".join(_sample_lines(SimpleNamespace(sample=load_sample(a.path).info)))


def test_sampling_is_deterministic_per_seed(synthetic, tmp_path):
    def urls(seed, work):
        out = prepare_sample(synthetic["crawl"], synthetic["tsv"], str(tmp_path / work), SampleParams(seed=seed, n_pairs=3),
                             synthetic["directory_pages"])
        return load_sample(out.path).urls

    assert urls(11, "x") == urls(11, "y")
    assert urls(11, "x") != urls(12, "z")


def test_directory_pages_never_reach_the_bags(synthetic):
    listed = Path(synthetic["directory_pages"]).read_text().split()
    corpus = load_corpus(synthetic["crawl"], lambda url: url in listed)
    bags = corpus.bags(Strategy(sources=(Source.ANCHOR,), window_size=0, distance_weighting=False))
    assert LEAK_WORD not in set(bags.vocabulary)
    leaky = load_corpus(synthetic["crawl"]).bags(Strategy(sources=(Source.ANCHOR,), window_size=0,
                                                          distance_weighting=False))
    assert LEAK_WORD in set(leaky.vocabulary)  # the check above can fail


def test_anchor_strategies_score_well_and_random_links_score_zero(report):
    table = pq.read_table(report["out"] / "measures.parquet").to_pylist()
    sibling = {r["strategy"]: r for r in table if r["measure"] == "sibling_gamma"}
    w32 = sibling["anchor-W32 none stem"]
    assert w32["value"] > 0.3 and w32["low"] > 0.1
    contents = sibling["content none stem"]
    assert contents["value"] > 0.1 and contents["low"] > 0.0
    links = sibling["links none stem"]
    assert abs(links["value"]) < 0.1
    assert links["low"] < 0.0 < links["high"]
    # Larger windows carry more of the class vocabulary here, as in the paper.
    assert sibling["anchor-W32 none stem"]["value"] > sibling["anchor-W0 none stem"]["value"]


def test_measures_table_and_report_files(report):
    out = report["out"]
    table = pq.read_table(out / "measures.parquet")
    assert {"strategy", "measure", "value", "low", "high"} <= set(table.column_names)
    measures = set(table.column("measure").to_pylist())
    assert {"gamma", "sibling_gamma", "cousin_gamma", "unrelated_gamma", "orthogonality", "coverage"} <= measures
    rows = table.to_pylist()
    for r in rows:
        if r["measure"].endswith("gamma") and r["value"] is not None:
            assert -1.0 <= r["low"] <= r["value"] <= r["high"] <= 1.0
    # Figure 8 (the NMDF curve) is drawn because the quick grid holds an NMDF strategy.
    for name in ("figure3", "figure4", "figure8", "metric"):
        assert (out / "figures" / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert b"<svg" in (out / "figures" / f"{name}.svg").read_bytes()
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/svg+xml;base64,') == 4
    assert not re.search(r'(src|href)="(?!data:)', page), "the report must not reference outside files"
    summary = (out / "summary.md").read_text()
    assert "144 URLs in 24 classes = 12 pairs of sibling third-level classes" in summary
    assert "Ranked listings" in summary and "Γ for this source" in summary
    assert "| rank | sim | category | familial distance | url |" in summary
    data = json.loads((out / "summary.json").read_text())
    assert data["best"] == report["summary"]["best"]
    assert data["sibling_gamma"][0]["value"] >= data["sibling_gamma"][-1]["value"]
    # Both pages are rendered from one list of blocks: the same sections in the same order.
    sections = re.findall(r"^## (.*)$", summary, flags=re.M)
    assert len(sections) >= 8 and re.findall(r"<h2>(.*?)</h2>", page) == [html.escape(t, quote=False) for t in sections]
    assert summary.count("\nSource http") == page.count("<h3>Source http") == 3


def test_findings_are_judged(report):
    findings = {f["claim"]: f for f in report["summary"]["findings"]}
    larger = findings["Larger anchor windows give a higher sibling-Γ (w32 > w0)"]
    assert larger["verdict"] == "holds"
    assert larger["low"] > 0
    assert "Jaccard and cosine give comparable results (Section 4)" in findings


def test_a_second_run_reuses_every_stage(synthetic, report):
    work = str(report["out"] / "_work")
    sample = prepare_sample(synthetic["crawl"], synthetic["tsv"], work, SampleParams(seed=3),
                            synthetic["directory_pages"])
    assert sample.reused
    strategies = strategy_grid("quick")["figure3"][:2]
    outputs = evaluate_group(synthetic["crawl"], sample, strategies, work)
    assert all(o.reused for o in outputs)


def test_counts_from_the_stage_equal_a_direct_computation(synthetic, report):
    """The stage's Γ for one strategy equals simcore on bags built straight from the crawl."""
    work = str(report["out"] / "_work")
    sample = prepare_sample(synthetic["crawl"], synthetic["tsv"], work, SampleParams(seed=3),
                            synthetic["directory_pages"])
    loaded = load_sample(sample.path)
    strategy = strategy_grid("quick")["figure3"][0]
    [output] = evaluate_group(synthetic["crawl"], sample, [strategy], work)
    listed = Path(synthetic["directory_pages"]).read_text().split()
    corpus = load_corpus(synthetic["crawl"], lambda url: url in listed)
    bags = corpus.bags(strategy, targets=loaded.url_ids.tolist())
    from simweb.core.similarity import exact_pairs

    n = len(loaded.urls)
    dense = np.zeros((n, n))
    present = np.flatnonzero(np.isin(loaded.url_ids, bags.url_ids))
    dense[np.ix_(present, present)] = exact_pairs(bags, strategy.metric, ids=loaded.url_ids[present].tolist())
    direct = gammas(pair_counts(dense, class_codes(loaded.classes)))
    assert output.stats["values"]["sibling_gamma"] == pytest.approx(direct["sibling_gamma"])
    assert output.stats["values"]["gamma"] == pytest.approx(direct["gamma"])


def test_grids_and_labels():
    paper = strategy_grid("paper")
    assert set(paper) == {"figure3", "figure4", "figure5", "figure6", "figure7", "figure9", "metric"}
    assert [figure_label("figure3", s) for s in paper["figure3"]] == [
        "w32", "w16", "w8", "w4", "w0", "topical", "syntactic", "contents", "links"]
    assert [figure_label("figure6", s) for s in paper["figure6"]] == [
        "None", "Distance", "Frequency", "Distance and Frequency"]
    assert [figure_label("figure7", s) for s in paper["figure7"]] == ["None", "log", "sqrt", "NMDF"]
    assert [figure_label("figure9", s) for s in paper["figure9"]] == ["NoStem", "StopStem", "Stem"]
    assert [figure_label("figure5", s) for s in paper["figure5"]] == [
        "Anchor Window", "Anchor Window, Content", "Anchor Window, Content, Links"]
    with pytest.raises(ValueError, match="paper, quick, links, hybrids, full"):
        strategy_grid("huge")
    groups = strategy_groups(list(dict.fromkeys(s for g in paper.values() for s in g)), 4)
    assert all(1 <= len(g) <= 4 for g in groups)
    assert sum(len(g) for g in groups) == len({s for g in paper.values() for s in g})
    assert all(s.window in Window for g in groups for s in g)


def test_missing_crawl_and_empty_sample_say_what_to_do(tmp_path, synthetic):
    with pytest.raises(FileNotFoundError, match="simweb ingest"):
        prepare_sample(str(tmp_path / "nowhere"), synthetic["tsv"], str(tmp_path / "w"))
    elsewhere = tmp_path / "elsewhere.tsv"  # a directory of pages the crawl does not link to
    elsewhere.write_text("".join(f"http://other{i}.example/\tTop/a/b/c{i % 2}\n" for i in range(8)))
    with pytest.raises(EmptySample, match="no pair of sibling classes.*check that the directory and the crawl"):
        prepare_sample(synthetic["crawl"], str(elsewhere), str(tmp_path / "w2"))


def test_command_line_without_prefect(synthetic, tmp_path, capsys):
    from simweb.cli import main

    code = main(["evaluate", "--crawl", synthetic["crawl"], "--directory", synthetic["rdf"], "--out",
                 str(tmp_path / "report"), "--grid", "quick", "--resamples", "100", "--no-prefect"])
    printed = capsys.readouterr().out
    assert code == 0
    # directory_pages.txt beside the directory file is found without being named.
    assert "directory_pages.txt" in printed
    assert "144 URLs in 24 classes" in printed
    assert re.search(r"anchor-W32 none stem\s+0\.\d{3}\s+\[0\.\d{3}, 0\.\d{3}\]", printed)
    assert f"report: {tmp_path / 'report' / 'report.html'}" in printed
    assert main(["evaluate", "--crawl", str(tmp_path / "none"), "--directory", synthetic["rdf"],
                 "--out", str(tmp_path / "x"), "--no-prefect"]) == 2


def test_a_directory_dump_cut_short_is_read_up_to_the_cut_and_the_exit_status_says_so(synthetic, tmp_path, capsys):
    from simweb.cli import main

    whole = Path(synthetic["rdf"]).read_bytes()
    cut = tmp_path / "content.rdf.u8"
    cut.write_bytes(whole[:whole.rindex(b"<ExternalPage")] + b"<ExternalPage about=\"http://z.exa")
    (tmp_path / "directory_pages.txt").write_bytes(Path(synthetic["directory_pages"]).read_bytes())
    code = main(["evaluate", "--crawl", synthetic["crawl"], "--directory", str(cut), "--out", str(tmp_path / "report"),
                 "--grid", "quick", "--resamples", "50", "--no-prefect"])
    captured = capsys.readouterr()
    assert code == 3
    line = whole[:whole.rindex(b"<ExternalPage")].count(b"\n") + 1
    assert f"the directory file ends early, inside its XML at line {line:,} (a download cut short?)" in captured.out
    assert captured.err.strip().splitlines()[-1].startswith(f"simweb evaluate: {cut}: the directory file ends early")
    assert (tmp_path / "report" / "report.html").exists()


@pytest.mark.slow
def test_flow_runs_on_dask_and_matches_the_in_process_run(synthetic, report, tmp_path, prefect_harness):
    from simweb.flows.evaluate_strategies import evaluate_strategies

    summary = evaluate_strategies(crawl=synthetic["crawl"], directory=synthetic["tsv"], out=str(tmp_path / "flow"),
                                  grid="quick", seed=3, directory_pages=synthetic["directory_pages"],
                                  n_resamples=300, group_size=3, n_workers=2)
    got = {r["strategy"]: r["value"] for r in summary["sibling_gamma"]}
    want = {r["strategy"]: r["value"] for r in report["summary"]["sibling_gamma"]}
    assert got == pytest.approx(want)
    assert (tmp_path / "flow" / "report.html").is_file()


def test_index_agreement_is_reported_for_the_section_7_strategy(report):
    index = report["summary"]["index"]
    assert index is not None and index["m"] == 80 and index["alpha"] == 0.15
    assert index["strategy"] == Strategy().label
    # ICWS estimates are unbiased with variance J(1-J)/m: on 144 documents they rank nearly as
    # exact Jaccard does, and PROCESSQUERY finds most pairs above α.
    assert index["recall"] > 0.7
    assert index["mean_abs_error"] < 0.06
    assert abs(index["gamma_estimate"]["sibling_gamma"] - index["gamma_exact"]["sibling_gamma"]) < 0.1
    assert "min-hash index against exact similarity" in (report["out"] / "summary.md").read_text()


def test_the_recommendation_is_cross_validated_over_classes(report):
    rec = json.loads((report["out"] / "summary.json").read_text())["recommended"]
    cv = rec["cross_validation"]
    # Chosen on half of the 12 sampled pairs of sibling classes, scored on the other half.
    assert cv["units"] == 12 and cv["folds"] == 2 * cv["splits"]
    assert sum(c["folds"] for c in cv["chosen_in_folds"]) <= cv["folds"]
    held = rec["held_out"]
    assert -1.0 <= held["low"] <= held["value"] <= held["high"] <= 1.0
    assert rec["section7"]["strategy"] == Strategy().label and -1.0 <= rec["section7"]["held_out"] <= 1.0
    # The stricter split by whole second-level classes: 6 of them in the synthetic directory.
    assert rec["held_out_families"]["units"] == 6
    assert Strategy().label in rec["held_out_families"]["references"]
    summary = (report["out"] / "summary.md").read_text()
    assert "## Recommended strategy (cross-validated over directory classes)" in summary
    assert "12 sampled pairs of sibling classes" in summary


def test_a_directory_with_one_top_level_class_is_measured_without_unrelated_pairs(synthetic, tmp_path):
    # A directory under a single top-level class (as one documentation site's navigation) has
    # no unrelated pairs: its unrelated-Γ is undefined, reported as no value, not an error.
    from simweb.tasks.stages.eval_index import evaluate_index

    top = TOPS[0]
    lines = [line for line in Path(synthetic["tsv"]).read_text().splitlines() if line.split("\t")[1].startswith(f"Top/{top}/")]
    tsv = tmp_path / "one_top.tsv"
    tsv.write_text("\n".join(lines) + "\n")
    sample = prepare_sample(synthetic["crawl"], str(tsv), str(tmp_path / "work"), SampleParams(seed=1),
                            synthetic["directory_pages"])
    [output] = evaluate_index(synthetic["crawl"], sample, [Strategy()], str(tmp_path / "work"))
    exact = output.stats["agreement"]["gamma_exact"]
    assert exact["unrelated_gamma"] is None and exact["sibling_gamma"] > 0


def test_bar_figures_share_one_y_axis_convention_per_measure():
    """Every bar starts at zero and the figures of one measure share one scale (report_figures)."""
    from simweb.core.gamma import ORTHOGONALITY, SIBLING_GAMMA, Estimate
    from simweb.tasks.report_figures import shared_ranges

    fig3 = [Estimate(0.60, 0.50, 0.70, 0.05), Estimate(0.69, 0.60, 0.77, 0.04)]
    fig9 = [Estimate(0.72, 0.61, 0.80, 0.05), Estimate(0.74, 0.63, 0.82, 0.05)]  # no bar near zero
    ortho = [Estimate(0.59, 0.40, 0.70, 0.05)]
    ranges = shared_ranges([(SIBLING_GAMMA, fig3), (SIBLING_GAMMA, fig9), (ORTHOGONALITY, ortho)])
    bottom, top = ranges[SIBLING_GAMMA]
    assert bottom == 0.0 and 0.82 < top <= 1.05
    assert ranges[ORTHOGONALITY][0] == 0.0 and ranges[ORTHOGONALITY][1] > 0.70
    negative = shared_ranges([(SIBLING_GAMMA, [Estimate(-0.2, -0.3, 0.1, 0.1)])])[SIBLING_GAMMA]
    assert negative[0] == -0.3
