"""The HTTP server under load: /api/related beside /api/info on the same server, in the same run.

    python -m benchmarks.serve --index DIR [--index DIR ...] [--clients 16] [--seconds 5] [--rounds 2]
                               [--workers N] [--code REV]

For each index, `simweb serve` is started as a user starts it (its default workers: one per
core, unless --workers), on a port the OS gives, and driven from one bounded client on
127.0.0.1: --clients connections kept alive, each sending its next request when the answer
to the last is in, for --seconds per phase. The phases, interleaved over --rounds rounds so
that load from other processes falls on each alike:

    /api/info                     the HTTP stack's own ceiling: no query, a small JSON answer
    /api/related?url=…            the default query (exact re-rank), top 10, of random documents
    /api/related?url=<unknown>    URLs that are no document of the index (404), equally random

printing requests/s, p50 and p99 of each and the ratios related/info (goal ≥ 0.5) and
unknown/related; how long the server took to answer its first request (ready); and the
memory of its processes from /proc/PID/smaps_rollup, after start and after the load: resident
(RSS), its own memory (Anonymous: what the process allocated — heap, stacks —, which no
other process shares) and the index's file pages each maps (shared by every worker: mapped,
not copied; a file page only one worker has touched yet counts as that worker's Private_Clean,
so "private" would grow with whatever share of the index a worker's queries read).

``--code REV`` runs the server of another git revision of this repository (laid out by
benchmarks._baseline; it must read the index's format), for figures before and after a change
from the same machine. Without --index the shared WARC fixtures are built into a temporary
index first.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A port the OS says is free now (the server binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Client:
    """HTTP/1.1 keep-alive connections on one event loop, each sending its next request once the
    last answer is read whole (a bounded client: at most ``connections`` requests in flight)."""

    def __init__(self, port: int, connections: int) -> None:
        self.port, self.connections = port, connections

    async def _one(self, targets: list[str], until: float, latencies: list[float], statuses: dict[int, int],
                   rng: random.Random) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            while time.perf_counter() < until:
                target = targets[rng.randrange(len(targets))]
                t0 = time.perf_counter()
                writer.write(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\n\r\n".encode())
                head = await reader.readuntil(b"\r\n\r\n")
                status = int(head.split(b" ", 2)[1])
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                latencies.append(time.perf_counter() - t0)
                statuses[status] = statuses.get(status, 0) + 1
        finally:
            writer.close()

    def run(self, targets: list[str], seconds: float, seed: int) -> tuple[list[float], dict[int, int], float]:
        """Latencies (s), status counts and the wall time of ``seconds`` of load on ``targets``."""
        latencies: list[float] = []
        statuses: dict[int, int] = {}

        async def main() -> float:
            t0 = time.perf_counter()
            until = t0 + seconds
            await asyncio.gather(*[self._one(targets, until, latencies, statuses, random.Random(seed * 1000 + i))
                                   for i in range(self.connections)])
            return time.perf_counter() - t0

        wall = asyncio.run(main())
        return latencies, statuses, wall


def get(port: int, target: str, timeout: float = 2.0) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", target)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def memory(pid: int, index_dir: str) -> list[dict[str, float]]:
    """RSS, private and index-file MiB of the server process ``pid`` and of each of its children."""
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    rows = []
    real = os.path.realpath(index_dir)
    for p in pids:
        try:
            with open(f"/proc/{p}/smaps_rollup") as f:
                fields = {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f if ":" in line
                                                             and line.split(":", 1)[1].strip().endswith("kB"))}
            mapped = 0
            with open(f"/proc/{p}/smaps") as f:  # the resident pages of the index's files
                current = None
                for line in f:
                    parts = line.split()
                    if len(parts) >= 6 and "-" in parts[0] and not line.startswith(("Rss", "Size")):
                        current = parts[5] if os.path.realpath(parts[5]).startswith(real) else None
                    elif current is not None and line.startswith("Rss:"):
                        mapped += int(parts[1])
        except OSError:
            continue
        rows.append({"pid": p, "rss": fields.get("Rss", 0) / 1024,
                     "own": fields.get("Anonymous", 0) / 1024,
                     "index_mapped": mapped / 1024})
    return rows


def _memory_line(rows: list[dict[str, float]]) -> str:
    total = sum(r["own"] for r in rows)
    each = ", ".join(f"{r['own']:.0f}" for r in rows)
    mapped = max((r["index_mapped"] for r in rows), default=0.0)
    return (f"own (anonymous) {total:,.0f} MiB in {len(rows)} processes ({each}), RSS {sum(r['rss'] for r in rows):,.0f} MiB; "
            f"index files resident in each worker up to {mapped:,.0f} MiB (shared)")


def targets_of(index_dir: str, n: int, seed: int) -> tuple[list[str], list[str], int, int | None]:
    """Request targets of ``n`` random documents and ``n`` unknown URLs; the index's documents and crawled pages."""
    import pyarrow.parquet as pq

    from simweb.tasks import index_store

    version = index_store.resolve(index_dir)
    manifest = json.loads((Path(version) / index_store.MANIFEST).read_text())
    urls = pq.read_table(Path(version) / index_store.DOCMAP_FILE, columns=["url"]).column("url").to_pylist()
    rng = np.random.default_rng(seed)
    chosen = [urls[i] for i in rng.choice(len(urls), size=min(n, len(urls)), replace=False)]
    known = [f"/api/related?url={quote(u, safe='')}" for u in chosen]
    unknown = [f"/api/related?url={quote(f'{u}-not-crawled-{k}', safe='')}" for k, u in enumerate(chosen)]
    return known, unknown, len(urls), manifest.get("n_crawled")


def start(index_dir: str, port: int, workers: int | None, code: Path | None) -> tuple[subprocess.Popen, float]:
    """`simweb serve` on ``port``; returns the process and the seconds until it answered /api/info."""
    from benchmarks._baseline import environment

    cmd = [sys.executable, "-m", "simweb", "serve", "--index", index_dir, "--port", str(port)]
    if workers is not None:
        cmd += ["--workers", str(workers)]
    env = environment(code)
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"simweb serve exited with {proc.returncode}: {proc.stderr.read().decode()[-2000:]}")
        try:
            status, _ = get(port, "/api/info", timeout=1.0)
            if status == 200:
                return proc, time.perf_counter() - t0
        except OSError:
            pass
        if time.perf_counter() - t0 > 300:
            proc.kill()
            raise RuntimeError("simweb serve did not answer within 300 s")
        time.sleep(0.02)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def pct(samples: list[float], p: float) -> float:
    return float(np.percentile(np.array(samples) * 1e3, p)) if samples else float("nan")


def run_index(index_dir: str, args: argparse.Namespace, code: Path | None) -> dict[str, dict[str, float]]:
    known, unknown, n_docs, n_crawled = targets_of(index_dir, args.urls, seed=1)
    port = free_port()
    proc, ready = start(index_dir, port, args.workers, code)
    crawled = f"{n_crawled:,} crawled pages, " if n_crawled is not None else ""
    print(f"\n== {index_dir}: {crawled}{n_docs:,} documents; server {'of ' + args.code if args.code else 'of this checkout'}"
          f", workers {'default' if args.workers is None else args.workers}, {args.clients} connections ==")
    print(f"  ready: first /api/info answered {ready:.2f} s after `simweb serve` started")
    try:
        at_start = memory(proc.pid, index_dir)
        phases = {"/api/info": ["/api/info"], "/api/related": known, "/api/related unknown": unknown}
        client = Client(port, args.clients)
        for target in (known[0], unknown[0]):  # warm: the first request of each kind
            get(port, target, timeout=60)
        pooled = {name: ([], {}, 0.0) for name in phases}
        for r in range(args.rounds):
            for name, targets in phases.items():
                lat, statuses, wall = client.run(targets, args.seconds, seed=r)
                pl, ps, pw = pooled[name]
                pl.extend(lat)
                for k, v in statuses.items():
                    ps[k] = ps.get(k, 0) + v
                pooled[name] = (pl, ps, pw + wall)
        after = memory(proc.pid, index_dir)
    finally:
        stop(proc)
    print(f"  {'':<24}{'requests/s':>12}{'p50 ms':>9}{'p99 ms':>9}  statuses")
    out = {}
    for name, (lat, statuses, wall) in pooled.items():
        rate = len(lat) / wall if wall else float("nan")
        out[name] = {"rate": rate, "p50": pct(lat, 50), "p99": pct(lat, 99)}
        shown = ", ".join(f"{k}: {v:,}" for k, v in sorted(statuses.items()))
        print(f"  {name:<24}{rate:>12,.0f}{out[name]['p50']:>9.2f}{out[name]['p99']:>9.2f}  {shown}")
    info, rel, unk = (out[k]["rate"] for k in phases)
    print(f"  ratios: related / info {rel / info:.2f} (goal ≥ 0.5); unknown / related {unk / rel:.2f} "
          f"(best of nothing: {args.rounds} interleaved rounds of {args.seconds:g} s pooled)")
    print(f"  memory after start: {_memory_line(at_start)}")
    print(f"  memory after load:  {_memory_line(after)}")
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--index", action="append", default=None, metavar="DIR", help="an index folder (repeatable)")
    ap.add_argument("--clients", type=int, default=16, help="connections in flight (default 16)")
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds of load per phase and round (default 5)")
    ap.add_argument("--rounds", type=int, default=2, help="interleaved rounds of the three phases (default 2)")
    ap.add_argument("--workers", type=int, default=None, help="`simweb serve --workers` (default: the server's)")
    ap.add_argument("--urls", type=int, default=2000, help="random documents asked about (default 2000)")
    ap.add_argument("--code", default=None, metavar="REV", help="serve with this git revision's code instead")
    args = ap.parse_args(argv)
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    code = None
    with tempfile.TemporaryDirectory(prefix="serve-bench-") as tmp:
        if args.code:
            from benchmarks._baseline import layout

            code = layout(args.code, Path(tmp) / "code")
        indexes = args.index
        if not indexes:
            fixtures = ROOT.parent / "shared" / "fixtures" / "warc"
            indexes = [str(Path(tmp) / "fixtures-index")]
            subprocess.run([sys.executable, "-m", "simweb", "build", str(fixtures), "--out", indexes[0]], cwd=ROOT,
                           check=True, stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(code)} if code
                           else None)
        print(f"serve benchmark: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
        for index_dir in indexes:
            run_index(index_dir, args, code)
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
