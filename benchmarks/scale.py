"""`simweb build` on crawls of growing size, stage by stage, beside the paper's per-machine figures.

    python -m benchmarks.scale [--sizes 10000 100000 1000000] [--cache DIR] [--workers N] [--part-mb MB]

For each size N, the crawl is ``simweb corpus scale --pages N`` (real pages of Debian documentation
packages, then perturbed copies under mirror host names once the real pages run out), built once
into ``CACHE/scale-N`` and reused on later runs. Each build is one ``simweb build`` command in a
fresh process, as a user runs it, while the resident set of every process of the command's tree
(Dask workers and the Prefect server included) is sampled five times a second. The ingest's time
runs from the command's start (the Prefect server's and the cluster's start-up included) to the
last file's record in the crawl (``crawl/stats``).

Printed per size: for the ingest and for each stage (bag fragments, merge, weighting, signatures,
invert, as their completion records time them), the wall time, pages/s, links/s and MB/s per core (MB of
gzipped WARC input), and for the bags' sub-stages rows/s per core (fragment rows written, fragment
rows merged, merged entries weighted: what their work grows with) and the cores its processes
kept busy (CPU seconds over wall seconds; in brackets, the flow's process alone); the peak RSS of
every process, largest first, with the stage it peaked in; the bytes of each
intermediate beside the gzipped WARC bytes (a file two stages share by a hard link counted
once, under the first in name order); and, beside them, the paper's per-machine figures
(Section 6: bag fragments 24 h on three machines for 45 million pages, 174 pages/s per machine;
signatures 22 h for 75 million bags, ~950 bags/s). Across sizes: time(N) / time(previous size), and
each sub-stage's time per row at N over its time per row at the previous size (1.00: linear in rows).
The targets: every process ≤ 2 GiB at every size; intermediates ≤ 2× the gzipped WARC bytes; 1M
pages in ≤ 30 minutes; time(1M) / time(100k) ≤ 11; merge and weighting linear in rows.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from benchmarks.memory import GIB, watch
from simweb.tasks.sources import list_archive_files

#: The paper's per-machine rates (Section 6.1–6.2, machines of 2002).
PAPER = {"bag-fragments": ("pages/s", 174.0), "signatures": ("bags/s", 950.0)}
STAGES = ("bag-fragments", "bag-merge", "bags", "signatures", "invert")


def corpus(size: int, cache: Path) -> Path:
    """The scale crawl of ``size`` pages under ``cache`` (built by ``simweb corpus scale`` once)."""
    folder = cache / f"scale-{size}"
    if not (folder / "SUMMARY.json").exists():
        print(f"building the {size:,}-page crawl into {folder} (once; later runs reuse it)", flush=True)
        subprocess.run([sys.executable, "-m", "simweb", "corpus", "scale", "--pages", str(size), "--out", str(folder)],
                       check=True)
    return folder


def stage_seconds(stages: Path) -> tuple[dict[str, float], int | None, dict[str, int], dict[str, tuple[float, float]]]:
    """Each stage's computing time, as its completion record (``_SUCCESS.json``) holds it, the
    number of bags the bags stage wrote, the rows the bags' sub-stages work through (the
    fragment rows the fragments write and the merge reads, the merged entries the weighting
    reads), and when each stage ran (start and end, seconds since the epoch)."""
    seconds, bags, rows, spans = {}, None, {}, {}
    for record in stages.glob("*/*/_SUCCESS.json"):
        done = json.loads(record.read_text())
        stage, stats = record.parent.parent.name, done.get("stats") or {}
        seconds[stage] = float(done.get("seconds", 0.0))
        if done.get("finished"):
            end = datetime.fromisoformat(done["finished"]).timestamp()
            spans[stage] = (end - seconds[stage], end)
        if stage == "bag-fragments":
            rows["bag-fragments"] = rows["bag-merge"] = int(stats.get("fragment_rows", 0))
        if stage == "bags":
            bags = stats.get("bags", bags)
            rows["bags"] = int(stats.get("entries", 0))
    return seconds, bags, rows, spans


def cpu_used(cpu: list[tuple[float, float, float]], start: float, end: float) -> tuple[float, float, float] | None:
    """Between ``start`` and ``end`` (seconds since the epoch), from :func:`benchmarks.memory.watch`'s
    samples: the wall seconds from the first sample to the last, the CPU seconds all the build's
    processes used in them, and those the build command's own process (the flow's) used. None
    when fewer than two samples fall there."""
    inside = [sample for sample in cpu if start <= sample[0] <= end]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return None
    (t0, own0, all0), (t1, own1, all1) = inside[0], inside[-1]
    return t1 - t0, all1 - all0, own1 - own0


def stage_at(when: float, spans: dict[str, tuple[float, float]], default: str) -> str:
    """The stage that was running at ``when`` (a span of :func:`stage_seconds`), else ``default``."""
    return next((stage for stage, (start, end) in spans.items() if start <= when <= end), default)


def folder_bytes(path: Path, seen: set[tuple[int, int]] | None = None) -> int:
    """Bytes of the files under ``path``, a file linked twice counted once (as on disk): across
    calls that pass the same ``seen``, too."""
    seen = set() if seen is None else seen
    total = 0
    for f in path.rglob("*") if path.exists() else ():
        if f.is_file():
            st = f.stat()
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


def ingest_end(crawl_dir: Path) -> float:
    """When the ingest ended (seconds since the epoch): the time of the last file's record."""
    return max((f.stat().st_mtime for f in (crawl_dir / "stats").glob("*.json")), default=0.0)


def build(crawl: Path, out: Path, workers: int | None, part_mb: int | None) -> dict:
    command = [sys.executable, "-m", "simweb", "build", str(crawl / "warc"), "--out", str(out), "--min-in-degree", "3"]
    if workers is not None:
        command += ["--workers", str(workers)]
    if part_mb is not None:
        command += ["--part-mb", str(part_mb)]
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "SIMWEB_PROGRESS": "log",
           "PREFECT_LOGGING_LEVEL": "INFO"}
    return watch(command, env, str(out.parent))


def per_second(count: float, seconds: float, cores: int) -> str:
    return f"{count / seconds / cores:>12,.0f}" if seconds > 0 else f"{'—':>12}"


def measure(size: int, cache: Path, workers: int | None, part_mb: int | None) -> dict:
    crawl = corpus(size, cache)
    summary = json.loads((crawl / "SUMMARY.json").read_text())
    pages, links = summary["pages"], summary["links"]
    warc_bytes = sum(Path(f).stat().st_size for f in list_archive_files(str(crawl / "warc")))  # what the build reads
    cores = workers or os.cpu_count() or 1
    with tempfile.TemporaryDirectory(prefix="simweb-bench-scale-", dir=cache) as tmp:
        out = Path(tmp, "index")
        run = build(crawl, out, workers, part_mb)
        log = cache / f"scale-{size}-build.log"  # the command's output, kept for reading afterwards
        log.write_text(run["output"])
        if run["returncode"] not in (0, 3):
            print(run["output"][-3000:])
            raise SystemExit(f"the build of the {size:,}-page crawl failed (exit {run['returncode']})")
        seconds, bags, rows_of, spans = stage_seconds(out / "stages")
        spans["ingest"] = (run["started"], ingest_end(out / "crawl"))
        seconds["ingest"] = spans["ingest"][1] - spans["ingest"][0]
        seen: set[tuple[int, int]] = set()  # the invert stage links the signatures stage's files
        sizes = {"crawl (ingest output)": folder_bytes(out / "crawl", seen),
                 **{f"stages/{p.name}": folder_bytes(p, seen) for p in sorted((out / "stages").glob("*"))},
                 "versions (published index)": folder_bytes(out / "versions", seen)}
    print(f"\n{size:,} pages ({summary.get('copied_pages', 0):,} of them perturbed copies), {links:,} links, "
          f"{warc_bytes / 1e6:,.0f} MB of gzipped WARC; {cores} core(s)")
    print(f"  {'step':<14}{'seconds':>9}{'pages/s/core':>14}{'links/s/core':>14}{'MB/s/core':>11}{'rows/s/core':>13}"
          f"{'cores busy':>13}   paper, per machine")
    used = {stage: cpu_used(run["cpu"], *span) for stage, span in spans.items()}

    def busy(stage: str) -> str:  # cores kept busy on average: all the processes (the flow's alone)
        found = used.get(stage)
        return f"{found[1] / found[0]:>6.2f} ({found[2] / found[0]:.2f})" if found else f"{'':>13}"

    rows = [(s, seconds[s]) for s in ("ingest", *STAGES) if s in seconds]
    if bags and "signatures" in seconds:
        print(f"  ({bags:,} bags — crawled pages and the pages they link to — signed at "
              f"{bags / seconds['signatures'] / cores:,.0f} bags/s per core; the paper: ~950 bags/s per machine)")
    for stage, t in rows:
        paper = PAPER.get(stage)
        mb = f"{warc_bytes / 1e6 / t / cores:>11.2f}" if stage == "ingest" and t > 0 else f"{'':>11}"
        rows = per_second(rows_of[stage], t, cores) if stage in rows_of else f"{'':>12}"
        print(f"  {stage:<14}{t:>9.1f}{per_second(pages, t, cores):>14}{per_second(links, t, cores):>14}{mb} {rows}"
              f"{busy(stage)}" + (f"   {paper[1]:,.0f} {paper[0]}" if paper else ""))
    if rows_of:
        print("  (rows: the fragment rows the fragments write and the merge reads, the merged entries the weighting "
              "reads: " + ", ".join(f"{s} {rows_of[s]:,}" for s in STAGES if s in rows_of) + ")")
    total = run["seconds"]
    outside = total - sum(seconds[s] for s in ("ingest", *STAGES) if s in seconds)
    outside_busy = ""
    whole = cpu_used(run["cpu"], -math.inf, math.inf)
    if whole and outside > 0:
        staged = sum(used[s][1] for s in ("ingest", *STAGES) if used.get(s))
        outside_busy = f"; {(whole[1] - staged) / outside:.2f} cores busy"
    print(f"  {'outside stages':<14}{outside:>9.1f}   (checks of the ingest, steps between the stages, publishing "
          f"and the command's end{outside_busy}; output kept in {log})")
    whole_busy = f"{whole[1] / whole[0]:>6.2f} ({whole[2] / whole[0]:.2f})" if whole else ""
    print(f"  {'whole build':<14}{total:>9.1f}{per_second(pages, total, cores):>14}{per_second(links, total, cores):>14}"
          f"{'':>24}{whole_busy}   (the command's wall time, start-up included)")
    peak = max((rss for rss, _ in run["peaks"]), default=0)
    print(f"  peak RSS of one process: {peak / GIB:.2f} GiB (target ≤ 2 GiB); of the whole tree: "
          f"{run['tree_peak'] / GIB:.2f} GiB")
    peaks = sorted([(rss, name, stage_at(when, spans, "outside the stages")) for rss, name, when in run["peak_times"]],
                   reverse=True)
    for rss, name, stage in peaks[:6]:
        print(f"      {rss / GIB:5.2f} GiB  {name}  (during: {stage})")
    intermediate = sizes["crawl (ingest output)"] + sum(v for k, v in sizes.items() if k.startswith("stages/"))
    print(f"  intermediates {intermediate / 1e6:,.0f} MB = {intermediate / warc_bytes:.2f}× the gzipped WARC "
          f"(target ≤ 2×):", ", ".join(f"{k} {v / 1e6:,.0f} MB" for k, v in sizes.items()))
    per_row = {s: seconds[s] / n for s, n in rows_of.items() if n and s in seconds}
    return {"size": size, "seconds": total, "peak": peak, "per_row": per_row}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], help="pages per crawl")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "simweb" / "scale",
                        help="where the crawls are built and kept (default ~/.cache/simweb/scale)")
    parser.add_argument("--workers", type=int, default=None, help="local Dask worker processes (default: one per core)")
    parser.add_argument("--part-mb", type=int, default=None, help="simweb build's --part-mb (default: its own)")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)
    results = [measure(size, args.cache, args.workers, args.part_mb) for size in sorted(args.sizes)]
    print()
    for before, after in zip(results, results[1:]):
        print(f"time({after['size']:,}) / time({before['size']:,}) = {after['seconds'] / before['seconds']:.2f} "
              f"for {after['size'] / before['size']:.0f}× the pages")
        # Linear in rows: the time a row costs at the larger size over its cost at the smaller one.
        per_row = [f"{s} {after['per_row'][s] / before['per_row'][s]:.2f}" for s in after["per_row"]
                   if s in before["per_row"]]
        if per_row:
            print("  time per row, larger / smaller (1.00: linear in rows): " + ", ".join(per_row))


if __name__ == "__main__":
    main()
