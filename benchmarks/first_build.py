"""A new user's first builds, timed as they type them: `simweb build CRAWL --out DIR`, wall clock
from the command's start to its exit, each in a fresh process and a fresh output folder.

    python -m benchmarks.first_build [--runs 3] [--skip-debdocs] [--skip-prefect]

Two crawls: the shared WARC fixtures (8 files, 424 kB, 47 pages) and DebDocs (27 files, 16 MB,
2,391 pages; built first with `simweb corpus debdocs --no-prefect` from the cached Debian
packages). Each is built by default (a small crawl: in one process, no Prefect server, no Dask
cluster) and, as the peer, with --prefect (a temporary Prefect server and a local Dask cluster
of one worker per core): the same index, the cost of the machinery. Prints each run, and the
minimum, median and maximum per case. Targets (issue 18): 47 pages ≤ 10 s, DebDocs ≤ 60 s.
The numbers are noisy on a shared machine: compare the two modes of one run of this script.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO.parent / "shared" / "fixtures" / "warc"
SIMWEB = [sys.executable, "-m", "simweb"]


def timed_build(crawl: str, work: Path, extra: list[str]) -> float:
    out = work / f"index-{time.monotonic_ns()}"
    env = {**os.environ, "SIMWEB_PROGRESS": "off", "PREFECT_HOME": str(work / "prefect-home")}
    t0 = time.perf_counter()
    done = subprocess.run(SIMWEB + ["build", crawl, "--out", str(out), *extra], capture_output=True, text=True,
                          env=env, cwd=REPO)
    seconds = time.perf_counter() - t0
    # 3: some files damaged, the rest built (the shared fixtures hold damaged files on purpose).
    if done.returncode not in (0, 3):
        raise SystemExit(f"simweb build {crawl} {' '.join(extra)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def debdocs_crawl(work: Path) -> str:
    out = work / "debdocs"
    done = subprocess.run(SIMWEB + ["corpus", "debdocs", "--out", str(out), "--no-prefect"], capture_output=True,
                          text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"simweb corpus debdocs failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return str(out / "warc")


def report(name: str, runs: list[float], target: float | None) -> None:
    line = (f"{name:<34} runs {len(runs)}  min {min(runs):6.1f} s  median {statistics.median(runs):6.1f} s  "
            f"max {max(runs):6.1f} s")
    if target is not None:
        line += f"  (target ≤ {target:.0f} s: {'met' if statistics.median(runs) <= target else 'NOT met'})"
    print(line, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="builds per case (default 3)")
    parser.add_argument("--prefect-runs", type=int, default=1, help="builds per case with --prefect (default 1)")
    parser.add_argument("--skip-debdocs", action="store_true")
    parser.add_argument("--skip-prefect", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="simweb-first-build-") as tmp:
        work = Path(tmp)
        crawls = [("47 pages (shared fixtures)", str(FIXTURES), 10.0)]
        if not args.skip_debdocs:
            t0 = time.perf_counter()
            crawls.append(("DebDocs, 2,391 pages", debdocs_crawl(work), 60.0))
            print(f"DebDocs crawl written in {time.perf_counter() - t0:.1f} s", flush=True)
        for name, crawl, target in crawls:
            cases = [(f"{name}: default", [], args.runs, target)]
            if not args.skip_prefect:
                cases.append((f"{name}: --prefect", ["--prefect"], args.prefect_runs, None))
            for label, extra, n, goal in cases:
                runs = []
                for i in range(n):
                    runs.append(timed_build(crawl, work, extra))
                    print(f"  {label} run {i + 1}: {runs[-1]:.1f} s", flush=True)
                report(label, runs, goal)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
