"""The ingest benchmark runs end to end and prints every contender, the checks and the floors."""
from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_ingest_benchmark_prints_its_contenders_and_checks(warc_dir):
    # A tiny run (one copy, one round, a tenth of a second a contender): the numbers mean
    # nothing here, only that every row and check is measured and printed.
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.ingest", str(warc_dir / "warcfile.warc.gz"),
         "--seconds", "0.1", "--rounds", "1"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    for row in ("simweb ingest stage", "baseline: warcio + BeautifulSoup", "limit: warcio + selectolax",
                "floor: warcio reading the records", "floor: warcio + Lexbor parse only"):
        assert row in out
    checks = [line for line in out.splitlines() if line.startswith(("PASS", "MISS"))]
    assert len(checks) == 3
    assert "simweb / baseline" in checks[0] and "simweb / limit" in checks[1] and "pages/s" in checks[2]
