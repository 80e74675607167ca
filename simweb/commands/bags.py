"""`simweb bags` builds a crawl's weighted bags; `simweb similarity` compares two pages' bags.

    simweb bags --crawl data --strategy "anchor:32+content,stem,dist,nmdf" --out data/work
    simweb bags --crawl data --strategy-json '{"sources": ["links"], "frequency": "none"}' --out data/work
    simweb bags --crawl data --out data/work --show http://example.com/
    simweb similarity http://a.example/ http://b.example/ --bags data/work

A strategy (paper Sections 3–5) is written SOURCES[,TOKEN...]: SOURCES joins anchor[:W]
(W = 0…32 words each side, stopwords not counted), anchor:syntactic, anchor:topical, content,
links (in-link ids) and outlinks (out-link ids) with "+"; tokens are a stemming (nostem,
stopstem, stem), dist or nodist (distance weighting log2(32/(1+d))), a frequency weighting
(none, binary, log, sqrt, nmdf), mu=X and sigma=Y (NMDF in natural-log df units; fitted to the
crawl when left out), norm=C (every bag's sum) and a metric (jaccard, cosine, overlap: Σ min of
bags not normalised). Omitted tokens take the paper's Section 7 choice:
anchor:32+content,stem,dist,nmdf,jaccard.

`bags` reads the ingest output in --crawl (pages/ and links/), writes fragments, merged
bags and weighted bags under --out (each reused when its inputs and parameters are
unchanged) and prints where the bags are and what was counted. `similarity` prints the bag
Jaccard, cosine and overlap (Σ min) of two pages and the terms they share.
"""
from __future__ import annotations

import argparse
import json
import sys


def register(subparsers) -> None:
    bags = subparsers.add_parser(
        "bags", help="build the weighted bag of every page of a crawl under a strategy",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bags.add_argument("--crawl", required=True, metavar="DIR", help="the ingest output (DIR/pages, DIR/links), or an index folder (`simweb build`) whose crawl is read")
    bags.add_argument("--out", required=True, metavar="DIR", help="where the stage outputs go (bags under DIR/bags)")
    which = bags.add_mutually_exclusive_group()
    which.add_argument("--strategy", default=None, metavar="SPEC",
                       help="e.g. 'anchor:32+content,stem,dist,nmdf' (default: that, the paper's choice)")
    which.add_argument("--strategy-json", default=None, metavar="JSON",
                       help="the strategy as a JSON object of Strategy fields")
    bags.add_argument("--partitions", type=int, default=None, metavar="P",
                      help="merge partitions (default: as many as --part-mb needs)")
    bags.add_argument("--part-mb", type=int, default=None, metavar="MB",
                      help="working memory of each task, in megabytes (default 768)")
    bags.add_argument("--scheduler", choices=("threads", "processes", "sync"), default="threads",
                      help="Dask scheduler for the stage (default: threads)")
    bags.add_argument("--show", action="append", default=[], metavar="URL",
                      help="print the top terms of this page's bag (repeatable)")
    bags.add_argument("--top", type=int, default=10, metavar="K", help="terms shown per bag (default 10)")
    bags.set_defaults(func=run_bags)

    sim = subparsers.add_parser(
        "similarity", help="bag Jaccard and cosine of two pages, and their shared terms",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sim.add_argument("url1", metavar="URL1")
    sim.add_argument("url2", metavar="URL2")
    sim.add_argument("--bags", required=True, metavar="DIR",
                     help="an index folder (`simweb build --out`), a bags folder, or the --out folder of "
                          "`simweb bags` when it holds one bag set")
    sim.add_argument("--top", type=int, default=10, metavar="K", help="shared terms shown (default 10)")
    sim.set_defaults(func=run_similarity)


def _strategy(args):
    from simweb.core.strategy import Strategy, StrategyError

    try:
        if args.strategy_json:
            try:
                data = json.loads(args.strategy_json)
            except json.JSONDecodeError as exc:
                raise StrategyError(f"--strategy-json: expected a JSON object, got invalid JSON ({exc})") from None
            return Strategy.from_dict(data)
        return Strategy.parse(args.strategy) if args.strategy else Strategy()
    except (StrategyError, TypeError) as exc:
        raise SystemExit(f"simweb bags: {exc}") from None


def _ids(urls: list[str], command: str) -> list[tuple[str, int]]:
    from simweb.core.urls import normalize_url, url_id

    out = []
    for url in urls:
        normal = normalize_url(url)
        if normal is None:
            raise SystemExit(f"simweb {command}: expected an absolute http(s) URL, got {url!r}")
        out.append((normal, url_id(normal)))
    return out


def _print_top(bags, url: str, uid: int, k: int) -> None:
    if uid not in bags:
        print(f"{url}: no bag (not crawled, not linked to, or only stopwords)")
        return
    top = (sorted(bags[uid].items(), key=lambda tw: (-tw[1], tw[0]))[:k] if isinstance(bags, dict)
           else bags.top_terms(uid, k))
    terms = ", ".join(f"{t} {w:.3f}" for t, w in top)
    print(f"{url}: {terms}")


def run_bags(args) -> int:
    strategy = _strategy(args)
    if args.partitions is not None and args.partitions < 1:
        print(f"simweb bags: --partitions: expected at least 1, got {args.partitions}", file=sys.stderr)
        return 2
    from simweb.tasks.bag_reader import read_bags
    from simweb.tasks.stages.bags import build_bags_stage
    from simweb.tasks.layout import crawl_folder_of

    args.crawl = crawl_folder_of(args.crawl)  # an index folder (`simweb build --out`): the crawl it keeps
    try:
        out = build_bags_stage(args.crawl, strategy, args.out, args.partitions, scheduler=args.scheduler,
                               **({"part_mb": args.part_mb} if args.part_mb is not None else {}))
    except (FileNotFoundError, ValueError) as exc:
        print(f"simweb bags: {exc}", file=sys.stderr)
        return 2
    s = out.stats
    print(f"bags: {strategy.label}  ({strategy.spec()})")
    print(f"  {'reused' if out.reused else 'built'}: {out.path}")
    rows = [("pages", s.get("pages", 0)), ("duplicate pages skipped", s.get("duplicate_pages", 0)),
            ("links", s.get("links", 0)), ("links of duplicate pages skipped", s.get("links_of_duplicate_pages", 0)),
            ("self-links skipped", s.get("self_links", 0)), ("bags", s.get("bags", 0)),
            ("empty bags dropped", s.get("empty_bags", 0)), ("terms", s.get("vocabulary", 0)),
            ("bag entries", s.get("entries", 0))]
    for label, n in rows:
        print(f"  {label:<34}{n:>12,}")
    w = s.get("weighting", {})
    if w.get("nmdf_mu") is not None:
        print(f"  NMDF mu={w['nmdf_mu']:.3f} sigma={w['nmdf_sigma']:.3f} (natural log of df)")
    if args.show:
        ids = _ids(args.show, "bags")
        bags = read_bags(out.path, [uid for _, uid in ids])
        for url, uid in ids:
            _print_top(bags, url, uid, args.top)
    return 0


def _index_bags(path: str, urls: list[str]) -> list[dict[str, float]] | None:
    """The bags of ``urls`` in the published index at ``path`` (an index folder of `simweb build`),
    or None when ``path`` is not one. Raises UnknownURL for a page the index does not hold."""
    from simweb.api import open_index
    from simweb.tasks import index_store

    try:
        index_store.resolve(path)
    except (FileNotFoundError, index_store.IndexFormatError, NotADirectoryError):
        return None
    index = open_index(path)
    return [index.bag(url) for url in urls]


def run_similarity(args) -> int:
    from simweb.api import UnknownURL
    from simweb.core.similarity import cosine, jaccard, overlap, shared_terms
    from simweb.tasks.bag_reader import find_bags, read_bags

    (u1, id1), (u2, id2) = _ids([args.url1, args.url2], "similarity")
    try:
        in_index = _index_bags(args.bags, [u1, u2])
    except UnknownURL as exc:
        print(f"simweb similarity: {exc}", file=sys.stderr)
        return 1
    if in_index is not None:  # an index folder: the bags it was built from, as it stores them
        a, b = in_index
        bags = {id1: a, id2: b}
    else:
        try:
            matrix = read_bags(find_bags(args.bags), [id1, id2])
        except FileNotFoundError as exc:
            print(f"simweb similarity: {exc}", file=sys.stderr)
            return 2
        missing = [u for u, i in ((u1, id1), (u2, id2)) if i not in matrix]
        if missing:
            print(f"simweb similarity: no bag for {', '.join(missing)} (not crawled, not linked to, "
                  "or only stopwords)", file=sys.stderr)
            return 1
        a, b = matrix.row(id1), matrix.row(id2)
        bags = {id1: a, id2: b}
    print(f"jaccard {jaccard(a, b):.4f}")
    print(f"cosine  {cosine(a, b):.4f}")
    print(f"overlap {overlap(a, b):.4f}")
    common = shared_terms(a, b, args.top)
    print(f"shared terms ({sum(1 for t in a if t in b)} of {len(a)} and {len(b)}), by min weight:")
    for t, wa, wb in common:
        print(f"  {t:<30} {wa:.4f}  {wb:.4f}")
    print("top terms:")
    _print_top(bags, u1, id1, args.top)
    _print_top(bags, u2, id2, args.top)
    return 0
