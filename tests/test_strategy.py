"""Strategy: the paper's strategy space as one frozen value (Sections 3–5)."""
from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.core.strategy import (
    PAPER_WINDOWS,
    Frequency,
    Metric,
    Source,
    Strategy,
    StrategyError,
    Window,
    paper_grid,
    paper_strategies,
)
from simweb.core.text import Stemming


def test_defaults_are_the_papers_section_7_choice():
    s = Strategy()
    assert s.sources == (Source.ANCHOR, Source.CONTENT)
    assert (s.window, s.window_size, s.stemming) == (Window.BASIC, 32, Stemming.STEM)
    assert s.distance_weighting and s.frequency is Frequency.NMDF and s.metric is Metric.JACCARD
    assert s.label == "anchor-W32+content dist nmdf stem"
    assert s.spec() == "anchor:32+content,stem,dist,nmdf,jaccard"


def test_labels_name_every_dimension_briefly():
    assert Strategy(sources=["links"], frequency="none").label == "links none stem"
    assert Strategy(sources=["anchor"], window="topical", distance_weighting=False, frequency="sqrt",
                    stemming="nostem", metric="cosine").label == "anchor-topical sqrt nostem cosine"
    assert Strategy(nmdf_mu=4.5, nmdf_sigma=1.25).label == "anchor-W32+content dist nmdf(mu=4.5,sigma=1.25) stem"


def test_strings_are_coerced_and_sources_put_in_canonical_order():
    s = Strategy(sources=["links", "content", "anchor", "links"], window="SYNTACTIC", stemming="stopstem")
    assert s.sources == (Source.ANCHOR, Source.CONTENT, Source.LINKS)
    assert s.window is Window.SYNTACTIC and s.stemming is Stemming.STOPSTEM
    assert Strategy(sources="content").sources == (Source.CONTENT,)
    assert s == Strategy(sources=("anchor", "content", "links"), window=Window.SYNTACTIC, stemming=Stemming.STOPSTEM)
    assert len({s, Strategy(sources=["content", "links", "anchor"], window="syntactic", stemming="stopstem")}) == 1


@pytest.mark.parametrize("fields, words", [
    ({"sources": ()}, "at least one of"),
    ({"sources": ["anchors"]}, "expected one of"),
    ({"window_size": 33}, "expected 0…32"),
    ({"window_size": -1}, "expected 0…32"),
    ({"window_size": 8.0}, "expected an integer"),
    ({"window_size": True}, "expected an integer"),
    ({"stemming": "porter"}, "expected one of"),
    ({"frequency": "idf"}, "expected one of"),
    ({"metric": "dice"}, "expected one of"),
    ({"nmdf_mu": 1.0}, "both or neither"),
    ({"nmdf_mu": 1.0, "nmdf_sigma": 0.0}, "positive"),
    ({"nmdf_mu": float("nan"), "nmdf_sigma": 1.0}, "finite"),
    ({"frequency": "log", "nmdf_mu": 1.0, "nmdf_sigma": 1.0}, "only used with frequency='nmdf'"),
    ({"normalise_to": 0}, "positive number"),
    ({"normalise_to": float("inf")}, "positive number"),
    ({"distance_weighting": "yes"}, "true or false"),
])
def test_bad_parameters_are_refused_with_what_was_expected(fields, words):
    with pytest.raises(StrategyError, match=words):
        Strategy(**fields)


@pytest.mark.parametrize("spec, expected", [
    ("anchor:32+content,stem,dist,nmdf", Strategy()),
    ("anchor", Strategy(sources=["anchor"])),
    ("anchor:0,nostem,nodist,none", Strategy(sources=["anchor"], window_size=0, stemming="nostem",
                                             distance_weighting=False, frequency="none")),
    ("content+anchor:topical,stopstem,sqrt,cosine", Strategy(window="topical", stemming="stopstem", frequency="sqrt",
                                                             metric="cosine")),
    ("links, log", Strategy(sources=["links"], frequency="log")),
    ("anchor:8,nmdf,mu=4.6,sigma=1.5,norm=100", Strategy(sources=["anchor"], window_size=8, nmdf_mu=4.6,
                                                         nmdf_sigma=1.5, normalise_to=100)),
])
def test_parse_reads_the_compact_form(spec, expected):
    assert Strategy.parse(spec) == expected


@pytest.mark.parametrize("spec, words", [
    ("", "expected a strategy"),
    ("anchor:wide", "anchor:W"),
    ("pagerank", "expected term sources"),
    ("anchor,stemmed", "expected a stemming"),
    ("anchor,mu=x", "expected a number"),
    ("anchor,lambda=2", "expected mu=X"),
    ("anchor:40", "expected 0…32"),
])
def test_parse_refuses_bad_text_naming_the_fix(spec, words):
    with pytest.raises(StrategyError, match=words):
        Strategy.parse(spec)


def test_keys_identify_what_decides_the_bags():
    s = Strategy()
    assert len(s.key()) == 16 and s.key() == Strategy().key()
    cosine = dataclasses.replace(s, metric=Metric.COSINE)
    assert cosine.key() != s.key() and cosine.bags_key() == s.bags_key()
    # Window settings cannot matter without anchor windows; NMDF parameters only with NMDF.
    c32, c8 = Strategy(sources=["content"]), Strategy(sources=["content"], window_size=8, distance_weighting=False)
    assert c32.bags_key() == c8.bags_key() and c32.fragment_params() == c8.fragment_params()
    assert Strategy(window="topical", window_size=8).bags_key() == Strategy(window="topical").bags_key()
    assert dataclasses.replace(s, frequency=Frequency.SQRT).fragment_params() == s.fragment_params()
    assert dataclasses.replace(s, frequency=Frequency.SQRT).bags_key() != s.bags_key()
    assert Strategy(nmdf_mu=1.0, nmdf_sigma=2.0).bags_key() != s.bags_key()


def test_dict_round_trip_and_unknown_fields():
    s = Strategy(sources=["anchor", "links"], window="syntactic", nmdf_mu=3.0, nmdf_sigma=1.0)
    d = s.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["sources"] == ["anchor", "links"] and d["window"] == "syntactic"
    assert Strategy.from_dict(d) == s
    with pytest.raises(StrategyError, match="unknown strategy field"):
        Strategy.from_dict({**d, "windowsize": 3})
    with pytest.raises(StrategyError, match="JSON object"):
        Strategy.from_dict(["anchor"])  # type: ignore[arg-type]


def test_a_strategy_is_a_valid_prefect_flow_parameter():
    """Prefect validates flow parameters with pydantic: a dict (from the UI or a deployment) becomes a Strategy."""
    import pydantic
    from prefect import flow

    adapter = pydantic.TypeAdapter(Strategy)
    assert adapter.validate_python({"sources": ["links"], "frequency": "log"}) == Strategy(sources=["links"],
                                                                                            frequency="log")
    assert adapter.validate_json(json.dumps(Strategy().to_dict())) == Strategy()
    assert adapter.dump_python(Strategy(), mode="json") == Strategy().to_dict()
    with pytest.raises(pydantic.ValidationError, match="expected 0…32"):
        adapter.validate_python({"window_size": 64})
    schema = adapter.json_schema()
    assert {"sources", "window", "window_size", "stemming", "frequency", "metric"} <= set(schema["properties"])

    @flow
    def uses(strategy: Strategy = Strategy()) -> str:
        return strategy.label

    params = uses.validate_parameters({"strategy": {"sources": ["content"], "stemming": "nostem"}})
    assert params["strategy"] == Strategy(sources=["content"], stemming="nostem")


def test_paper_grid_lists_the_strategies_of_figures_3_to_9():
    grid = paper_grid()
    assert set(grid) == {"figure3", "figure4", "figure5", "figure6", "figure7", "figure9"}
    fig3 = grid["figure3"]
    assert [s.window_size for s in fig3[:5]] == sorted(PAPER_WINDOWS, reverse=True)
    assert [s.window for s in fig3[5:7]] == [Window.TOPICAL, Window.SYNTACTIC]
    assert [s.sources for s in fig3[7:]] == [(Source.CONTENT,), (Source.LINKS,)]
    assert grid["figure4"] == fig3
    assert all(s.distance_weighting for s in grid["figure5"])  # the paper's footnote 12
    assert [s.sources for s in grid["figure5"]] == [
        (Source.ANCHOR,), (Source.ANCHOR, Source.CONTENT), (Source.ANCHOR, Source.CONTENT, Source.LINKS)]
    assert [(s.distance_weighting, s.frequency) for s in grid["figure6"]] == [
        (False, Frequency.NONE), (True, Frequency.NONE), (False, Frequency.NMDF), (True, Frequency.NMDF)]
    assert [s.frequency for s in grid["figure7"]] == [f for f in Frequency if f is not Frequency.BINARY]
    assert [s.stemming for s in grid["figure9"]] == [Stemming.NOSTEM, Stemming.STOPSTEM, Stemming.STEM]
    distinct = paper_strategies()
    assert len(distinct) == len(set(distinct)) == 18


strategies = st.builds(
    Strategy,
    sources=st.sets(st.sampled_from(list(Source)), min_size=1).map(tuple),
    window=st.sampled_from(list(Window)),
    window_size=st.integers(0, 32),
    stemming=st.sampled_from(list(Stemming)),
    distance_weighting=st.booleans(),
    frequency=st.sampled_from([Frequency.NONE, Frequency.LOG, Frequency.SQRT]),
    normalise_to=st.floats(0.001, 1e6),
    metric=st.sampled_from(list(Metric)),
) | st.builds(
    Strategy,
    window_size=st.integers(0, 32),
    nmdf_mu=st.floats(-5, 20),
    nmdf_sigma=st.floats(0.01, 10),
)


@settings(max_examples=200, deadline=None)
@given(strategies)
def test_text_and_dict_forms_round_trip(s):
    assert Strategy.parse(s.spec()) == s
    assert Strategy.from_dict(s.to_dict()) == s
    assert Strategy.parse(s.spec()).key() == s.key()
    assert hash(Strategy.from_dict(s.to_dict())) == hash(s)


def test_contradictory_tokens_and_repeated_sources_are_refused():
    for spec, field in [("anchor:32,stem,nostem", "stemming"), ("content,log,sqrt", "frequency"),
                        ("anchor,dist,nodist", "distance weighting"), ("anchor,jaccard,cosine", "metric"),
                        ("anchor,mu=1,mu=2", "nmdf mu")]:
        with pytest.raises(StrategyError, match=f"contradict each other: both set the {field}"):
            Strategy.parse(spec)
    with pytest.raises(StrategyError, match="named twice"):
        Strategy.parse("anchor:8+content+anchor:16")
    assert Strategy.parse("anchor,stem,stem") == Strategy.parse("anchor,stem")  # a repeat is no contradiction


def test_the_report_labels_are_read_back():
    from simweb.core.strategy import paper_grid

    for strategies in paper_grid().values():
        for strategy in strategies:
            assert Strategy.parse(strategy.label) == strategy, strategy.label
    assert Strategy.parse("anchor-W32 dist nmdf nostem") == Strategy.parse("anchor:32,dist,nmdf,nostem")
    assert Strategy.parse("content") == Strategy.parse("content,stem")  # a bare source stays a spec


# --- source shares and out-links (beyond the paper) -------------------------------------------------

def test_shares_round_trip_through_the_text_form_the_label_and_dicts():
    s = Strategy.parse("anchor:32@0.5+inlinks@0.3+outlinks@0.2,stem,dist,nmdf")
    assert s.sources == (Source.ANCHOR, Source.LINKS, Source.OUTLINKS) and s.shares == (0.5, 0.3, 0.2)
    assert s.spec() == "anchor:32@0.5+links@0.3+outlinks@0.2,stem,dist,nmdf,jaccard"
    assert s.label == "anchor-W32@0.5+links@0.3+outlinks@0.2 dist nmdf stem"
    assert Strategy.parse(s.spec()) == s == Strategy.parse(s.label) == Strategy.from_dict(s.to_dict())
    assert s.share_of() == {Source.ANCHOR: 0.5, Source.LINKS: 0.3, Source.OUTLINKS: 0.2}
    # Shares follow their sources into the canonical order, whatever order they were given in.
    assert Strategy.parse("outlinks@0.25+anchor@0.75") == Strategy(sources=["anchor", "outlinks"], shares=[0.75, 0.25])
    assert Strategy(sources=["content", "anchor"], shares={"anchor": 0.7, "content": 0.3}).shares == (0.7, 0.3)


def test_todays_specs_keep_their_meaning_and_their_keys():
    assert Strategy.parse("anchor:32+content").shares is None
    assert Strategy.parse("links").sources == (Source.LINKS,) == Strategy.parse("inlinks").sources
    # No shares: the same bag parameters, hence the same cached bags, as before shares existed.
    assert "shares" not in Strategy().bag_params()
    shared = Strategy(shares=[0.5, 0.5])
    assert shared.bag_params()["shares"] == [0.5, 0.5] and shared.key() != Strategy().key()
    assert shared.fragment_params() == Strategy().fragment_params()


@pytest.mark.parametrize("spec, words", [
    ("anchor@0.5+content", "a share for every source or for none"),
    ("anchor@0.5+content@0.6", "summing to 1"),
    ("anchor@0.5", "summing to 1"),
    ("anchor@0+content@1", r"in \(0, 1\]"),
    ("anchor@-0.5+content@1.5", r"in \(0, 1\]"),
    ("anchor@x+content@1", "a share after '@'"),
    ("links@0.5+inlinks@0.5", "named twice"),
    ("outlinks:3", "expected term sources"),
])
def test_bad_shares_are_refused_with_what_was_expected(spec, words):
    with pytest.raises(StrategyError, match=words):
        Strategy.parse(spec)


def test_a_source_strategy_is_one_source_without_shares():
    s = Strategy(sources=["anchor", "outlinks"], shares=[0.6, 0.4], stemming="nostem")
    assert s.source_strategy(Source.OUTLINKS) == Strategy(sources=["outlinks"], stemming="nostem")
    with pytest.raises(StrategyError, match="not a source"):
        s.source_strategy(Source.CONTENT)
