"""Run the benchmarks: ``python -m benchmarks [NAME ...]``.

Without names, every ``benchmarks/<name>.py`` runs, in name order, but those of ``BY_NAME_ONLY``
(hours of crawl building, or crawls to name); each runs in a process of
its own (``python -m benchmarks.<name>``), so that one benchmark's core pinning, caches and
memory do not colour the next one's numbers. Exits non-zero if any benchmark failed to run.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: Benchmarks run only when named: scale builds crawls of up to a million pages (hours), memory
#: needs the crawls to measure (``python -m benchmarks.memory --help``), fragments the 100k
#: scale crawl, ingested (or a crawl named with --crawl).
BY_NAME_ONLY = {"scale", "memory", "fragments"}


def available() -> list[str]:
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_"))


def main(argv: list[str] | None = None) -> int:
    names = list(sys.argv[1:] if argv is None else argv)
    known = available()
    if names in (["-h"], ["--help"]):
        print(__doc__.strip())
        print(f"\nbenchmarks: {', '.join(known)}")
        return 0
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; expected some of: {', '.join(known)}", file=sys.stderr)
        return 2
    failed = []
    for name in names or [n for n in known if n not in BY_NAME_ONLY]:
        print(f"== benchmarks.{name}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", f"benchmarks.{name}"], cwd=HERE.parent)
        print(f"== benchmarks.{name}: {'ok' if code == 0 else f'exit code {code}'} "
              f"in {time.perf_counter() - t0:.1f} s\n", flush=True)
        if code != 0:
            failed.append(name)
    if failed:
        print(f"benchmarks that failed to run: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
