"""`simweb build` of a scale crawl with recaptured pages, before and after a revision, in one run.

    python -m benchmarks.captures --crawl ~/.cache/simweb/scale/scale-100000 [--every 10] [--baseline REV|none]
                                  [--keep DIR]

The crawl is a ``simweb corpus scale`` folder (its ``warc/`` files). Beside it a recrawl is made
once and reused (``<crawl>-recrawl/recrawl-every<K>.warc.gz``): every K-th page of the crawl
captured again, its record copied with a later WARC-Date (2030-01-01) and a new record id. Then
the crawl and the recrawl are built by ``simweb build`` in a fresh process each, first with the
baseline revision's code (benchmarks._baseline: laid out first on PYTHONPATH), then with this
checkout's, while the resident set of every process of the command's tree is sampled five times
a second (benchmarks.memory.watch). Printed for each: the wall time, the peak of the tree and of
each process over 64 MiB, and the build's summary line. ``--baseline none`` builds with this
checkout's code only (at a million pages one build takes half an hour); ``--keep DIR`` publishes
this checkout's index in DIR and keeps it, for the query and serve benchmarks to open; ``--only
before|after`` builds with one revision only (a million-page comparison in two sittings).
"""
from __future__ import annotations

import argparse
import io
import os
import sys
import tempfile
import uuid
from pathlib import Path

from benchmarks._baseline import environment, layout
from benchmarks.memory import report, watch

#: The commit before a URL's page became its latest capture.
BASELINE = "9e0d0e1^"
RECAPTURE_DATE = "2030-01-01T00:00:00Z"


def recrawl(crawl: Path, every: int) -> Path:
    """Every ``every``-th response record of the crawl's WARC files again, dated later (made once)."""
    from warcio.archiveiterator import ArchiveIterator
    from warcio.warcwriter import WARCWriter

    out = Path(f"{crawl}-recrawl") / f"recrawl-every{every}.warc.gz"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(".partial")
    seen = 0
    with open(partial, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for path in sorted((crawl / "warc").glob("*.warc.gz")):
            with open(path, "rb") as stream:
                for record in ArchiveIterator(stream):
                    if record.rec_type != "response":
                        continue
                    seen += 1
                    if seen % every:
                        continue
                    uri = record.rec_headers.get_header("WARC-Target-URI")
                    payload = record.raw_stream.read()
                    writer.write_record(writer.create_warc_record(
                        uri, "response", payload=io.BytesIO(payload), http_headers=record.http_headers,
                        warc_headers_dict={"WARC-Date": RECAPTURE_DATE, "WARC-Record-ID": f"<urn:uuid:{uuid.uuid4()}>"}))
    os.replace(partial, out)
    return out


#: Times the crawl's captures are resolved (simweb.tasks.crawl.copies) over the built crawl, in a
#: fresh process of each revision: the wall time (the least of the runs) and the process's peak RSS.
RESOLVE = """
import resource, sys, time
from simweb.tasks.crawl.parts import crawl_parts
from simweb.tasks.crawl import copies
found = crawl_parts(sys.argv[1])
best = None
for _ in range(3):
    t0 = time.perf_counter()
    if hasattr(copies, "crawl_copies"):
        result = copies.crawl_copies(found)
    else:
        result = copies.duplicate_copies(found.pages, found.aliases)
    best = min(best or 1e9, time.perf_counter() - t0)
dropped = sum(a.size for a in result.by_part.values())
print(f"{best:.2f} s, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, {dropped:,} page rows dropped")
"""


def resolve(crawl_dir: Path, code: Path | None) -> str:
    import subprocess

    done = subprocess.run([sys.executable, "-c", RESOLVE, str(crawl_dir)], env=environment(code), capture_output=True,
                          text=True)
    return done.stdout.strip() if done.returncode == 0 else f"FAILED: {done.stderr[-500:]}"


def build(files: list[Path], out: Path, code: Path | None, mode: str) -> dict:
    out.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "simweb", "build", *map(str, files), "--out", str(out), "--min-in-degree", "3",
               f"--{mode}"]
    env = {**environment(code), "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "SIMWEB_PROGRESS": "log",
           "PREFECT_LOGGING_LEVEL": "INFO"}
    return watch(command, env, str(out.parent))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--crawl", type=Path, required=True, help="a `simweb corpus scale` folder")
    parser.add_argument("--every", type=int, default=10, help="recapture every K-th page (default 10)")
    parser.add_argument("--baseline", default=BASELINE, help=f"the revision compared with (default {BASELINE})")
    parser.add_argument("--keep", type=Path, default=None, metavar="DIR",
                        help="build this checkout's index into DIR and keep it (default: a temporary folder)")
    parser.add_argument("--only", choices=("before", "after"), default=None,
                        help="build with one revision's code only (with --keep, the 'after' index kept by an earlier "
                             "run is the one whose captures are resolved)")
    parser.add_argument("--mode", choices=("prefect", "no-prefect"), default="prefect",
                        help="build through Prefect on a local Dask cluster (default) or in the command's process")
    args = parser.parse_args(argv)
    files = sorted((args.crawl / "warc").glob("*.warc.gz"))
    files.append(recrawl(args.crawl, args.every))
    print(f"{len(files) - 1} WARC file(s) of {args.crawl} and {files[-1]} "
          f"({sum(f.stat().st_size for f in files) / 1e6:,.0f} MB gzipped)")
    with tempfile.TemporaryDirectory(prefix="simweb-bench-captures-", dir=args.crawl.parent) as tmp:
        code = None if args.baseline == "none" else layout(args.baseline, Path(tmp, "baseline"))
        revisions = (("before", code), ("after", None)) if code else (("after", None),)
        runs = tuple(run for run in revisions if args.only in (None, run[0]))
        where = {"before": Path(tmp, "before", "index"), "after": args.keep.resolve() if args.keep else Path(tmp, "after", "index")}
        for label, path in runs:
            run = build(files, where[label], path, args.mode)
            report(label, run)
            lines = [line for line in run["output"].splitlines() if "the pages are" in line or "published" in line]
            print("      " + ("\n      ".join(lines[-2:]) if lines else "(no summary line)"))
        crawl_dir = where["after"] / "crawl"
        for label, path in revisions if crawl_dir.is_dir() else ():
            print(f"  captures resolved ({label}): {resolve(crawl_dir, path)}")


if __name__ == "__main__":
    main()
