"""Peak RSS of every process of `simweb build`, today's code against this checkout's, on crawls of growing size.

    python -m benchmarks.memory --warc DIR [DIR ...] [--link-heavy] [--workers 1] [--baseline REV]

For each crawl — folders of WARC files, e.g. ``simweb corpus scale --pages N --out DIR`` (give
DIR/warc), and with ``--link-heavy`` a synthetic WARC written here of a few index pages with
12,000 links each among small pages — runs ``simweb build`` in a fresh process, first with the
code of ``--baseline`` (a git revision, laid out by benchmarks._baseline; skipped with
``--baseline none``) and then with this checkout's, and samples the resident set of every
process of the build's process tree (Dask workers and the Prefect server included) five times
a second. Prints the wall time and the peak RSS of each process, largest first, and the peak
of the tree. Issue 15's target: at most 2 GiB in every process at every size, with the default
part size (``--part-mb``, simweb build's ``--part-mb``).
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._baseline import BASELINE, environment, layout

GIB = 1 << 30


def link_heavy_warc(path: Path, pages: int = 6, links: int = 12_000, targets: int = 3_000, seed: int = 0) -> Path:
    """A WARC file of ``pages`` index pages with ``links`` anchors each (API listings, site maps)
    and ``targets`` small pages they point at, each index page with a paragraph of words around
    every anchor; deterministic given ``seed``."""
    import numpy as np

    from simweb.corpora.warc import WarcFile, record_id, warc_date

    rng = np.random.default_rng(seed)
    vocabulary = [f"w{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{chr(97 + i // 676 % 26)}" for i in range(5_000)]
    words = np.array(vocabulary, dtype=object)
    date = warc_date(0)
    base = "https://heavy.example"
    with WarcFile(str(path), "software: benchmarks.memory\n", record_id("warcinfo", str(path)), date) as warc:
        for p in range(pages):
            chosen = rng.integers(0, targets, size=links)
            text = words[rng.integers(0, len(words), size=(links, 12))]
            items = "".join(f"<li>{' '.join(text[i, :6])} <a href=\"/t/{t}.html\">{text[i, 6]} {text[i, 7]}</a> "
                            f"{' '.join(text[i, 8:])}</li>\n" for i, t in enumerate(chosen.tolist()))
            body = f"<html><head><title>index {p}</title></head><body><ul>\n{items}</ul></body></html>".encode()
            warc.add_page(f"{base}/index/{p}.html", 0, body, "utf-8")
        for t in range(targets):
            text = " ".join(words[rng.integers(0, len(words), size=80)])
            body = (f"<html><head><title>page {t}</title></head><body><p>{text}</p>"
                    f"<a href=\"/index/{t % pages}.html\">index</a></body></html>").encode()
            warc.add_page(f"{base}/t/{t}.html", 0, body, "utf-8")
    return path


def watch(command: list[str], env: dict[str, str], cwd: str) -> dict:
    """Run ``command``; the peak RSS of each process of its tree, sampled every 0.2 s, as
    ``peaks`` (rss, name), largest first, and ``peak_times`` (rss, name, the wall-clock time of
    the peak, seconds since the epoch), and ``cpu`` the CPU seconds used so far at each sample
    as (wall-clock time, the command's own process, all its processes — those that ended with
    their last sample); ``started`` is the wall-clock time the command was started at."""
    import psutil

    t0, started = time.perf_counter(), time.time()
    proc = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    root = psutil.Process(proc.pid)
    peaks: dict[int, tuple[int, str, float]] = {}
    tree_peak = 0
    used: dict[int, float] = {}
    cpu: list[tuple[float, float, float]] = []
    output = io.BytesIO()
    os.set_blocking(proc.stdout.fileno(), False)
    while proc.poll() is None:
        try:
            members = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        total = 0
        for member in members:
            try:
                rss = member.memory_info().rss
                name = peaks.get(member.pid, (0, "", 0.0))[1] or " ".join(member.cmdline()[:4])[-90:]
                times = member.cpu_times()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            used[member.pid] = times.user + times.system
            total += rss
            if rss > peaks.get(member.pid, (0, "", 0.0))[0]:
                peaks[member.pid] = (rss, name, time.time())
        tree_peak = max(tree_peak, total)
        cpu.append((time.time(), used.get(root.pid, 0.0), sum(used.values())))
        output.write(proc.stdout.read() or b"")
        time.sleep(0.2)
    output.write(proc.stdout.read() or b"")
    return {"seconds": time.perf_counter() - t0, "started": started, "returncode": proc.returncode, "tree_peak": tree_peak,
            "peaks": sorted(((rss, name) for rss, name, _ in peaks.values()), reverse=True),
            "peak_times": sorted(peaks.values(), reverse=True), "cpu": cpu, "output": output.getvalue().decode(errors="replace")}


def report(label: str, run: dict) -> None:
    status = "" if run["returncode"] == 0 else f"  FAILED (exit {run['returncode']}):\n{run['output'][-2000:]}"
    print(f"  {label:<9} {run['seconds']:7.1f} s   tree peak {run['tree_peak'] / GIB:5.2f} GiB{status}")
    for rss, name in run["peaks"]:
        if rss >= 64 << 20:
            print(f"      {rss / GIB:5.2f} GiB  {name}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.memory", description=__doc__.splitlines()[0])
    parser.add_argument("--warc", nargs="*", default=[], help="folders of WARC files (one crawl each)")
    parser.add_argument("--link-heavy", action="store_true", help="also a synthetic crawl of pages with 12,000 links")
    parser.add_argument("--workers", type=int, default=1, help="local Dask worker processes of each build")
    parser.add_argument("--baseline", default=BASELINE, help="git revision to compare with ('none': skip)")
    parser.add_argument("--part-mb", type=int, default=None, help="this checkout's --part-mb (default: its own)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="simweb-bench-memory-") as tmp:
        crawls = [Path(w) for w in args.warc]
        if args.link_heavy:
            heavy = Path(tmp, "heavy")
            heavy.mkdir()
            link_heavy_warc(heavy / "heavy.warc.gz")
            crawls.append(heavy)
        if not crawls:
            parser.error("give --warc DIR and/or --link-heavy")
        old = None if args.baseline == "none" else layout(args.baseline, Path(tmp, "baseline"))
        for crawl in crawls:
            print(f"{crawl}: simweb build --workers {args.workers}")
            for label, path in (("baseline", old), ("this", None)):
                if label == "baseline" and path is None:
                    continue
                out = Path(tmp, f"index-{label}")
                command = [sys.executable, "-m", "simweb", "build", str(crawl), "--out", str(out),
                           "--workers", str(args.workers)]
                if label == "this" and args.part_mb is not None:
                    command += ["--part-mb", str(args.part_mb)]
                env = {**environment(path), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
                report(label, watch(command, env, tmp))
                subprocess.run(["rm", "-rf", str(out)], check=False)


if __name__ == "__main__":
    main()
