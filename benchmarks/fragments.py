"""The bag fragments of a crawl's parts with simweb's C paths, against the same code without them.

    python -m benchmarks.fragments [--crawl DIR] [--parts 3] [--rounds 2]

The C paths are the gather of word runs and the sums of equal (URL, term) pairs
(simcore/_gather.c) and the Porter stemmer (simcore/_porter.c); without them the fragments are
gathered with numpy, summed with Arrow's group-by and stemmed by nltk, with the same fragments.
Each run makes the fragments of the ``--parts`` largest links parts and the largest pages part
of the crawl under the default strategy, in a fresh process (as a worker meets its first part:
no word stemmed yet), on one core; the runs alternate between the two, ``--rounds`` times.
Printed: seconds per run, links per second (the links of the links parts over the whole run),
and the ratio of the medians.

``--crawl`` is an ingested crawl folder (``INDEX/crawl`` after ``simweb build … --until
ingest``); by default the 100,000-page scale crawl (``benchmarks.scale``), ingested once into
``~/.cache/simweb/scale/scale-100000-ingested``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.scale import corpus

#: What a run does, in its own process: ``python -c RUN CRAWL MODE PARTS``; prints one JSON line.
RUN = r"""
import glob, json, os, sys, tempfile, time
from unittest import mock
import numpy as np
from simweb.core import bag_entries as core_bags, text
from simweb.core.strategy import Strategy
from simweb.tasks.bags import fragments as stage

crawl, mode, n_parts = sys.argv[1], sys.argv[2], int(sys.argv[3])
if mode == "without":
    for patch in (mock.patch.object(core_bags, "_c_runs", None), mock.patch.object(stage, "_c_sum_pairs", None),
                  mock.patch.object(text, "_c_stem", None)):
        patch.start()
elif None in (core_bags._c_runs, stage._c_sum_pairs, text._c_stem):
    sys.exit("the C paths are not built (simweb.core._gather, simweb.core._porter): nothing to compare")
text.porter_stem("naïve")  # nltk's import (about a second), outside the timing
by_size = lambda kind: sorted(glob.glob(os.path.join(crawl, kind, "*.parquet")), key=os.path.getsize, reverse=True)
links, pages = by_size("links")[:n_parts], by_size("pages")[:1]
os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
start = time.perf_counter()
n_links = 0
with tempfile.TemporaryDirectory() as tmp:
    for i, part in enumerate(links):
        n_links += stage.fragments_of_links_part(part, Strategy(), np.zeros(0, np.uint64), os.path.join(tmp, f"l{i}"))["links"]
    for i, part in enumerate(pages):
        stage.fragments_of_pages_part(part, Strategy(), np.zeros(0, np.uint64), os.path.join(tmp, f"p{i}"))
print(json.dumps({"seconds": time.perf_counter() - start, "links": n_links}))
"""


def ingested(cache: Path) -> Path:
    """The 100k scale crawl, ingested once (without Prefect) into the cache."""
    crawl = corpus(100_000, cache)
    out = cache / "scale-100000-ingested"
    if not (out / "crawl" / "links").is_dir():
        print(f"ingesting {crawl} into {out} (once; later runs reuse it)", flush=True)
        subprocess.run([sys.executable, "-m", "simweb", "build", str(crawl / "warc"), "--out", str(out),
                        "--until", "ingest", "--no-prefect"], check=True)
    return out / "crawl"


def run(crawl: Path, mode: str, parts: int) -> dict:
    done = subprocess.run([sys.executable, "-c", RUN, str(crawl), mode, str(parts)], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crawl", type=Path, default=None, help="an ingested crawl folder (INDEX/crawl)")
    parser.add_argument("--parts", type=int, default=3, help="links parts a run reads, the largest first (default 3)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of each kind, in turns (default 2)")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "simweb" / "scale")
    args = parser.parse_args()
    crawl = args.crawl or ingested(args.cache)
    seconds: dict[str, list[float]] = {"with": [], "without": []}
    links = 0
    for _ in range(args.rounds):
        for mode in ("without", "with"):
            result = run(crawl, mode, args.parts)
            seconds[mode].append(result["seconds"])
            links = result["links"]
            print(f"  {mode + ' the C paths':<22}{result['seconds']:>8.2f} s{links / result['seconds']:>12,.0f} links/s",
                  flush=True)
    base, fast = statistics.median(seconds["without"]), statistics.median(seconds["with"])
    print(f"bag fragments of {args.parts} links part(s) ({links:,} links) and a pages part of {crawl}, one core:")
    print(f"  without the C paths (numpy, Arrow, nltk)  {base:8.2f} s  {links / base:>10,.0f} links/s")
    print(f"  with them                                 {fast:8.2f} s  {links / fast:>10,.0f} links/s")
    print(f"  with / without: {base / fast:.2f}x (medians of {args.rounds} run(s) each)")


if __name__ == "__main__":
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    main()
