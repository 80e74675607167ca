"""Directories of any depth: --depth (default 3, the paper's), a shallower directory taken at its
own depth and said so, familial distances named for the depth, and the classes left out when
sibling classes are paired named in the sample summary."""
from __future__ import annotations

import json

import numpy as np
import pytest

from simweb.core.directory import DirectoryFormatError, build_directory, collapse_depth
from simweb.core.directory import Listing
from simweb.core.gamma import PARTIAL_GAMMAS, COUSIN, UNRELATED, SIBLING, class_codes, distance_names, pair_counts
from simweb.core.sampling import describe, sample_class_pairs


def test_the_collapse_depth_is_the_directorys_own_when_it_is_shallower():
    assert collapse_depth(3, 5) == 3 and collapse_depth(3, 3) == 3
    assert collapse_depth(3, 2) == 2 and collapse_depth(4, 3) == 3
    with pytest.raises(DirectoryFormatError, match="1 level.*expected at least 2"):
        collapse_depth(3, 1)
    with pytest.raises(DirectoryFormatError, match="depth: expected at least 2"):
        collapse_depth(1, 3)


def test_build_directory_counts_the_deepest_listing():
    listings = [Listing("http://a.example/", "Top/Arts/Music"), Listing("http://b.example/", "Top/Arts/Film/Noir/X")]
    assert build_directory(listings).counts["deepest"] == 4
    two = build_directory(listings[:1], depth=2)
    assert two.class_of("http://a.example/") == ("Arts", "Music")


def test_familial_distances_are_named_for_the_depth():
    assert distance_names(3) == ("same", "sibling", "cousin", "unrelated")
    assert distance_names(2) == ("same", "sibling", "unrelated")
    assert distance_names(4) == ("same", "sibling", "cousin", "3 levels apart", "unrelated")


def test_at_depth_two_the_unrelated_gamma_compares_the_same_class_with_distance_two():
    """Depth 2 has no cousins: cousin-Γ has no pairs (NaN) and unrelated-Γ is (same, distance 2)."""
    classes = [("a", "x"), ("a", "x"), ("a", "y"), ("b", "z")]
    sims = np.array([[1, .9, .5, .1], [.9, 1, .5, .1], [.5, .5, 1, .1], [.1, .1, .1, 1]])
    counts = pair_counts(sims, class_codes(classes))
    assert counts.types == ((0, 1), (0, 2), (1, 2))
    assert counts.measure_columns(PARTIAL_GAMMAS[COUSIN]) == []
    assert [counts.types[t] for t in counts.measure_columns(PARTIAL_GAMMAS[UNRELATED])] == [(0, 2)]
    assert [counts.types[t] for t in counts.measure_columns(PARTIAL_GAMMAS[SIBLING])] == [(0, 1)]
    deeper = pair_counts(np.eye(2), class_codes([("a", "b", "c"), ("a", "b", "d")]))
    assert [deeper.types[t] for t in deeper.measure_columns(PARTIAL_GAMMAS[UNRELATED])] == [(0, 3)]


def test_the_summary_names_classes_left_out_when_siblings_are_paired():
    classes = {f"http://{c}{i}.example/": ("top", "mid", c) for c in "pqr" for i in range(2)}
    sample = sample_class_pairs(classes, set(classes), n_pairs=5, seed=1)
    assert len(sample.class_pairs) == 1 and len(sample.unpaired) == 1
    (left,) = sample.unpaired
    assert left not in {c for pair in sample.class_pairs for c in pair}
    lines = describe(sample).lines()
    assert any(line.startswith("left out when sibling classes were paired (1,") and
               "Top/top/mid/" + left[-1] in line for line in lines), lines


def _two_level_tsv(synthetic, path):
    """The synthetic crawl's directory cut to its first two levels below Top."""
    path.write_text("".join(f"{u}\tTop/{c[0]}/{c[1]}\n" for u, c in synthetic["targets"]))
    return str(path)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    from test_evaluate import build_synthetic_crawl

    return build_synthetic_crawl(tmp_path_factory.mktemp("synthetic-depth"))


def test_a_two_level_directory_is_judged_at_its_own_depth_and_says_so(synthetic, tmp_path):
    from simweb.flows.evaluate_strategies import evaluate_strategies

    tsv = _two_level_tsv(synthetic, tmp_path / "two-levels.tsv")
    summary = evaluate_strategies.fn(crawl=synthetic["crawl"], directory=tsv, out=str(tmp_path / "r"), grid="quick",
                                     directory_pages=synthetic["directory_pages"], n_resamples=50)
    lines = summary["sample"]
    assert any("the directory is 2 levels deep below Top, shallower than the collapse depth 3" in line
               for line in lines), lines
    assert any("pairs of sibling second-level classes" in line for line in lines), lines
    assert any("unrelated" in line and "cousin" not in line for line in lines if "familial distance" in line)
    info = json.loads(next((tmp_path / "r" / "_work" / "eval-sample").glob("*/sample.json")).read_text())
    assert info["depth"] == 2
    values = [r["value"] for r in summary["sibling_gamma"]]
    assert values and all(v == v for v in values)  # no NaN: every strategy judged


def test_depth_option_collapses_a_deeper_directory_higher(synthetic, tmp_path, capsys):
    from simweb.cli import main

    code = main(["evaluate", "--crawl", synthetic["crawl"], "--directory", synthetic["tsv"],
                 "--out", str(tmp_path / "r"), "--grid", "quick", "--resamples", "50", "--depth", "2",
                 "--no-prefect"])
    out = capsys.readouterr().out
    assert code == 0
    assert "pairs of sibling second-level classes" in out and "shallower" not in out
    assert main(["evaluate", "--crawl", synthetic["crawl"], "--directory", synthetic["tsv"],
                 "--out", str(tmp_path / "r1"), "--depth", "1"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--depth: expected at least 2 levels" in err



def test_categories_written_with_another_separator_are_said_so():
    import io
    from collections import Counter

    from simweb.core.directory import iter_tsv

    counts = Counter()
    text = "http://a.example/\tArts > Music > Jazz\nhttp://b.example/\tArts::Film\nhttp://c.example/\tTop/Arts/Dance\n"
    assert len(list(iter_tsv(io.BytesIO(text.encode()), counts))) == 3
    assert counts["topics_not_slash_separated"] == 2
    with pytest.raises(DirectoryFormatError, match=r"; 2 of them look like paths written with '>', '::', '\|' or"):
        collapse_depth(3, 1, counts["topics_not_slash_separated"])
    with pytest.raises(DirectoryFormatError, match=r"so that classes have siblings$"):
        collapse_depth(3, 1)
