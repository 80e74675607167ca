"""The bag arrays of a published index written anew, by a baseline revision and by this checkout, in one run.

    python -m benchmarks.bag_arrays --index ~/.cache/simweb/idx-1m [--baseline REV] [--rounds 1]

The invert stage ends by writing the index's bags as the flat arrays the default query's re-rank
reads (simweb.tasks.bag_arrays), in the build's own process. Here the bags files of the index's
current version are linked into a scratch folder beside it, and the arrays written from them in a
fresh process of each revision (interleaved when ``--rounds`` > 1): printed for each, the wall
time, the process's peak resident set and whether the arrays are byte for byte those of the
index.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._baseline import environment, layout
from simweb.tasks import index_store as store

#: The commit before the arrays were written a slice of documents at a time.
BASELINE = "e3131a8"
ARRAYS = (store.BAG_OFFSETS_FILE, store.BAG_TERMS_FILE, store.BAG_WEIGHTS_FILE, store.BAG_SUMS_FILE,
          store.VOCAB_FILE, store.VOCAB_OFFSETS_FILE)

WRITE = """
import json, resource, sys, time
from simweb.tasks.bag_arrays import write_bag_arrays
folder = sys.argv[1]
manifest = json.load(open(folder + "/index.json"))
t0 = time.perf_counter()
counts = write_bag_arrays(folder, [b["file"] for b in manifest["bags"]], manifest["n_docs"])
print(f"{time.perf_counter() - t0:.1f} s, peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB,"
      f" {counts['entries']:,} entries, {counts['vocabulary']:,} terms")
"""


def write(scratch: Path, code: Path | None) -> str:
    done = subprocess.run([sys.executable, "-c", WRITE, str(scratch)], env=environment(code), capture_output=True,
                          text=True)
    return done.stdout.strip() if done.returncode == 0 else f"FAILED: {done.stderr.strip().splitlines()[-1:]}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="an index folder (its current version is read)")
    parser.add_argument("--baseline", default=BASELINE, help=f"the revision compared with (default {BASELINE})")
    parser.add_argument("--rounds", type=int, default=1, help="interleaved rounds (default 1)")
    args = parser.parse_args(argv)
    version = Path(store.open_version(str(args.index)).path)
    with tempfile.TemporaryDirectory(prefix="simweb-bench-bag-arrays-", dir=args.index.parent) as tmp:
        code = layout(args.baseline, Path(tmp, "baseline"))
        scratch = Path(tmp, "version")
        scratch.mkdir()
        for f in version.iterdir():
            if f.name.startswith("bags-") or f.name == store.MANIFEST:
                os.link(f, scratch / f.name)
        print(f"the bag arrays of {version} written anew ({sum(1 for _ in scratch.glob('bags-*'))} bags files)")
        for r in range(args.rounds):
            for label, path in (("before", code), ("after", None)):
                result = write(scratch, path)
                same = all(filecmp.cmp(scratch / a, version / a, shallow=False) for a in ARRAYS
                           if (scratch / a).exists())
                print(f"  {label:<7} ({args.baseline if path else 'this checkout'}): {result}; "
                      f"{'the same arrays as the index' if same else 'ARRAYS DIFFER from the index'}")
                for a in ARRAYS:
                    (scratch / a).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
