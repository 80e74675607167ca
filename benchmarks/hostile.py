"""Hostile input, whole commands: every hostile file made here, each given to the command a user
runs, timed, its peak memory and its outcome checked.

    python -m benchmarks.hostile [--only NAME ...] [--baseline REV] [--baseline-timeout 60] [--keep DIR]

Each case writes its input (WARC files with warcio's writer, a WACZ package, a crawl folder, a
small tmpfs when run as root) and runs one command in a fresh process — ``simweb build FILE
--out INDEX``, ``simweb ingest``, ``simweb cdxj`` or ``simweb serve`` with requests sent to it —
as a user would, start-up included. Printed per case: what it is, the wall time of the whole
command, the CPU time and the peak resident memory of its largest process (getrusage of the
children), the exit status, and whether the outcome is the one expected (pages kept, the skip
reason counted, the one line said). Targets (issue 49): the record of 300,000 gzip members in
≤ 15 s, the page of 200,000 nested divs in ≤ 30 s.

With ``--baseline REV`` the two timed cases also run on that revision of the code (laid out
by benchmarks._baseline, on the same machine in the same run), each stopped after
``--baseline-timeout`` seconds, and the ratio is printed (a lower bound when it was stopped).
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from benchmarks._baseline import environment, layout

#: The commit before issue 49's work: the code the two timed cases are compared with.
BASELINE = "a0b3c10"
ORDINARY = b"<html><title>ok</title><body><p>ordinary words about cats <a href='http://ok.example/b'>b</a></p></body></html>"


def response(writer: WARCWriter, url: str, body: bytes, headers=()) -> None:
    http = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"), *headers], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http))


def warc(path: Path, pages, gzip_each: bool = True) -> Path:
    """A WARC file of (url, body, headers) responses and one ordinary page."""
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=gzip_each)
        for url, body, headers in pages:
            response(writer, url, body, headers)
        response(writer, "http://ok.example/", ORDINARY)
    return path


def nested(depth: int, tag: str = "div", before: str = "") -> bytes:
    return (f"<html><title>deep</title><body>{before}" + f"<{tag}>" * depth + "word" + f"</{tag}>" * depth
            + "</body></html>").encode()


def plain_warc(records) -> bytes:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    writer.write_record(writer.create_warcinfo_record("go.warc", {"software": "benchmarks.hostile"}))
    for url, body in records:
        response(writer, url, body)
    return buf.getvalue()


# --- the cases -----------------------------------------------------------------------------


@dataclass
class Case:
    name: str
    what: str
    make: object  # (folder) -> (argv after "simweb", expected exit status, check(result, folder) -> str | None)
    timed: bool = False  # compared with the baseline
    target: float | None = None  # seconds, whole command
    needs_root: bool = False


@dataclass
class Result:
    code: int
    seconds: float
    cpu: float
    rss_mb: float
    stdout: str
    stderr: str
    extra: dict = field(default_factory=dict)


def summary_count(text: str, label: str) -> int | None:
    for line in text.splitlines():
        if line.strip().startswith(label):
            return int(line.split()[-1].replace(",", ""))
    return None


def build_case(pages_fn, expected_pages: int, skip: str | None = None, code: int = 0, file_name="h.warc.gz"):
    def make(folder: Path):
        path = pages_fn(folder / file_name)
        def check(result: Result, folder: Path) -> str | None:
            pages = summary_count(result.stdout, "pages written")
            if pages != expected_pages:
                return f"expected {expected_pages} pages written, got {pages}"
            if skip and not summary_count(result.stdout, skip):
                return f"expected a record skipped as {skip!r}"
            return None
        return ["build", str(path), "--out", str(folder / "index")], code, check
    return make


def gowarc_trailing(path: Path) -> Path:
    whole = gzip.compress(plain_warc([("http://go.example/", ORDINARY), ("http://go.example/about", ORDINARY)]))
    path.write_bytes(whole + b"\x00garbage after the member\n" * 4)
    return path


def gowarc_mid_record(path: Path) -> Path:
    whole = gzip.compress(plain_warc([("http://go.example/", ORDINARY), ("http://go.example/about", ORDINARY)]))
    rng = random.Random(7)
    text = " ".join("".join(rng.choice("abcdefghij") for _ in range(6)) for _ in range(2000))
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    response(writer, "http://go.example/cut", f"<html><body>{text}".encode())
    member = buf.getvalue()
    path.write_bytes(whole + member[:len(member) * 2 // 3])
    return path


def bomb(coding: str):
    def pages(path: Path) -> Path:
        zeros = b"\0" * (1 << 30)
        if coding == "gzip":
            body = gzip.compress(zeros, compresslevel=9)
        elif coding == "br":
            import brotli
            body = brotli.compress(zeros, quality=5)
        else:
            import zstandard
            body = zstandard.ZstdCompressor(level=3).compress(zeros)
        return warc(path, [("http://bomb.example/", body, [("Content-Encoding", coding)])])
    return pages


def stopwords_crawl(folder: Path):
    path = folder / "stop.warc.gz"
    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for i in range(200):
            response(writer, f"http://stop{i}.example/", b"<html><title>the of</title><body><p>the and of to in it</p></body></html>")

    def check(result: Result, folder: Path) -> str | None:
        if (folder / "index" / "CURRENT").exists():
            return "an index was published"
        return None if "nothing to index" in result.stderr else "no 'nothing to index' line"
    return ["build", str(path), "--out", str(folder / "index")], 4, check


def full_disk(folder: Path):
    disk = folder / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(disk)], check=True)
    fixtures = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "warc"

    def check(result: Result, folder: Path) -> str | None:
        subprocess.run(["umount", str(disk)], check=False)
        last = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else ""
        if "no space left on the device (ENOSPC)" not in last or "Traceback" in result.stderr:
            return f"expected one line about the full disk, got {last[:120]!r}"
        return None
    return ["build", str(fixtures), "--out", str(disk / "index")], 1, check


def urls_case(folder: Path):
    path = folder / "u.warc"
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=False)
    response(writer, "http://u.example/caf@RAW@", b"<html><title>self</title><body><p>me <a href='/caf@RAW@'>me</a></p></body></html>")
    response(writer, "http://u.example/a>", b"<html><title>a</title><body><p>the page a</p></body></html>")
    response(writer, "http://u.example/b", b"<html><title>b</title><body><p>to <a href='/a>'>a</a></p></body></html>")
    out = io.BytesIO()
    for record in buf.getvalue().split(b"WARC/1.0\r\n")[1:]:
        head, _, block = record.partition(b"\r\n\r\n")
        block = block[:-4].replace(b"@RAW@", b"\xff")
        lines = [b"Content-Length: %d" % len(block) if line.lower().startswith(b"content-length:") else line
                 for line in head.replace(b"@RAW@", b"\xff").split(b"\r\n")]
        out.write(b"WARC/1.0\r\n" + b"\r\n".join(lines) + b"\r\n\r\n" + block + b"\r\n\r\n")
    path.write_bytes(out.getvalue())

    def check(result: Result, folder: Path) -> str | None:
        import pyarrow.parquet as pq
        links = [(r["source_url"], r["target_url"]) for p in sorted((folder / "crawl" / "links").glob("*.parquet"))
                 for r in pq.read_table(p, columns=["source_url", "target_url"]).to_pylist()]
        want = {("http://u.example/caf%EF%BF%BD", "http://u.example/caf%EF%BF%BD"),
                ("http://u.example/b", "http://u.example/a%3E")}
        return None if set(links) == want else f"links {links}"
    return ["ingest", str(path), "--out", str(folder / "crawl")], 0, check


def wacz_case(folder: Path):
    path = folder / "site.wacz"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("datapackage.json", "{}")

    def check(result: Result, folder: Path) -> str | None:
        return None if "it has no archive/ folder" in result.stdout else "no word of what is wrong with the package"
    return ["ingest", str(path), "--out", str(folder / "crawl")], 4, check


def cdxj_case(folder: Path):
    crawl = folder / "crawl"
    path = gowarc_trailing(folder / "corrupted-trailing-bytes.warc.gz.open")
    subprocess.run([sys.executable, "-m", "simweb.cli", "ingest", str(path), "--out", str(crawl), "--no-prefect"],
                   capture_output=True, env=CURRENT_ENV, check=False)

    def check(result: Result, folder: Path) -> str | None:
        return None if "not replayable" in result.stderr else "cdxj does not say the records are not replayable"
    return ["cdxj", str(crawl), "-o", str(folder / "x.cdxj")], 0, check


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_case(folder: Path):
    """``simweb serve`` on a small index, asked as an attacker would; the checks run while it serves."""
    warc_path = warc(folder / "s.warc.gz", [(f"http://s{i}.example/", ORDINARY.replace(b"cats", f"cats {i}".encode()), ())
                                            for i in range(5)])
    subprocess.run([sys.executable, "-m", "simweb.cli", "build", str(warc_path), "--out", str(folder / "index"),
                    "--min-in-degree", "0"], capture_output=True, env=CURRENT_ENV, check=True)
    port = free_port()
    script = f"""
import http.client, json, subprocess, sys, time, urllib.parse
proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "serve", "--index", {str(folder / "index")!r},
                         "--port", "{port}"], stderr=subprocess.DEVNULL)
def ask(method, path, host):
    c = http.client.HTTPConnection("127.0.0.1", {port}, timeout=30)
    c.putrequest(method, path, skip_host=True); c.putheader("Host", host); c.endheaders()
    r = c.getresponse(); body = r.read(); c.close(); return r.status, r.getheader("location"), body
for _ in range(300):
    try:
        ask("GET", "/api/info", "127.0.0.1"); break
    except OSError:
        time.sleep(0.2)
found = {{}}
found["evil_info"] = ask("GET", "/api/info", "evil.example")[:2]
found["evil_slash"] = ask("GET", "/api/info/", "evil.example")[:2]
q = urllib.parse.quote("http://s1.example/", safe="")
p = urllib.parse.quote("javascript:alert(document.domain)//", safe="")
status, _, body = ask("GET", f"/?url={{q}}&replay_prefix={{p}}", "127.0.0.1")
found["js_page"] = [status, b'href="javascript' in body.lower()]
found["js_api"] = ask("GET", f"/api/related?url={{q}}&replay_prefix={{p}}", "127.0.0.1")[0]
found["head"] = ask("HEAD", "/", "127.0.0.1")[0]
proc.terminate(); proc.wait()
print(json.dumps(found))
"""
    def check(result: Result, folder: Path) -> str | None:
        found = json.loads(result.stdout.strip().splitlines()[-1])
        ok = (found["evil_info"] == [400, None] and found["evil_slash"] == [400, None]
              and found["js_page"] == [422, False] and found["js_api"] == 422 and found["head"] == 200)
        return None if ok else f"answers {found}"
    return ["-c", script], 0, check


CASES = [
    Case("members-300k", "one record whose payload is 300,000 concatenated gzip members (a ~20 KB file)",
         build_case(lambda p: warc(p, [("http://members.example/", gzip.compress(ORDINARY) + gzip.compress(b"") * 300_000,
                                        [("Content-Encoding", "gzip")])]), 2), timed=True, target=15.0),
    Case("deep-200k", "one 1.2 MB page of 200,000 nested <div>s",
         build_case(lambda p: warc(p, [("http://deep.example/", nested(200_000), ())]), 1, "page nested too deep"),
         timed=True, target=30.0),
    Case("foster-200k", "200,000 <div>s a table moves before it (its depth unseen while parsing: the CPU budget)",
         build_case(lambda p: warc(p, [("http://foster.example/", nested(200_000, before="<table>")[:-14] + b"</table>", ())]),
                    1, "page parse over its time")),
    Case("formatting-20k", "20,000 nested formatting elements, each with its own attributes",
         build_case(lambda p: warc(p, [("http://b.example/", "".join(f"<b class=c{i}>" for i in range(20_000)).encode(), ())]),
                    1, "page nested too deep")),
    Case("gzip-bomb", "a payload of 1 GiB of zeros, gzip (1 MB)", build_case(bomb("gzip"), 1, "payload too large")),
    Case("br-bomb", "a payload of 1 GiB of zeros, brotli", build_case(bomb("br"), 1, "payload too large")),
    Case("zstd-bomb", "a payload of 1 GiB of zeros, zstd", build_case(bomb("zstd"), 1, "payload too large")),
    Case("gowarc-trailing-bytes", "a WARC gzipped as one member, then bytes that are not gzip",
         build_case(gowarc_trailing, 2, code=3, file_name="corrupted-trailing-bytes.warc.gz.open")),
    Case("gowarc-mid-record", "a WARC gzipped as one member, then a member cut in a record",
         build_case(gowarc_mid_record, 2, "truncated record", code=3, file_name="corrupted-mid-record.warc.gz.open")),
    Case("cdxj-not-replayable", "simweb cdxj of a file gzipped as a whole", cdxj_case),
    Case("stopwords-crawl", "200 pages whose every word is a stopword", stopwords_crawl),
    Case("urls", "a target URI ending in '>', invalid UTF-8 in a target URI and in the page's own link", urls_case),
    Case("wacz-without-warc", "a WACZ package with no archive/ folder", wacz_case),
    Case("server", "Host: evil.example, a javascript: replay prefix, HEAD /", server_case),
    Case("full-disk", "simweb build into a 600 KB tmpfs", full_disk, needs_root=True),
]

CURRENT_ENV = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}


def run(argv: list[str], env: dict, timeout: float | None) -> Result:
    """One command in a fresh process: its wall time, and (from a wrapper that waits for it) its
    CPU time and the peak RSS of its largest process."""
    wrapper = ("import resource, subprocess, sys, json\n"
               "done = subprocess.run(sys.argv[2:], capture_output=True, text=True)\n"
               "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
               "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr)\n"
               "open(sys.argv[1], 'w').write(json.dumps([u.ru_utime + u.ru_stime, u.ru_maxrss, done.returncode]))\n")
    command = [sys.executable] + (argv if argv[0] == "-c" else ["-m", "simweb.cli", *argv])
    with tempfile.NamedTemporaryFile(suffix=".json") as usage:
        start = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-c", wrapper, usage.name, *command], capture_output=True,
                                  text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return Result(-1, time.perf_counter() - start, float("nan"), float("nan"), "", "stopped")
        seconds = time.perf_counter() - start
        cpu, rss, code = json.loads(Path(usage.name).read_text() or "[0, 0, -1]")
    return Result(code, seconds, cpu, rss / 1024, done.stdout, done.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", metavar="NAME", help=f"cases to run: {', '.join(c.name for c in CASES)}")
    parser.add_argument("--baseline", default=None, metavar="REV", help=f"compare the timed cases with REV (e.g. {BASELINE})")
    parser.add_argument("--baseline-timeout", type=float, default=60.0, metavar="S")
    parser.add_argument("--keep", default=None, metavar="DIR", help="keep the inputs and outputs in DIR")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.only or c.name in args.only]
    root = Path(args.keep or tempfile.mkdtemp(prefix="simweb-hostile-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; inputs in {root}", flush=True)
    print(f"{'case':<22} {'wall s':>7} {'cpu s':>7} {'peak MB':>8} {'exit':>4}  outcome", flush=True)
    failures = 0
    baseline_env = None
    if args.baseline:
        baseline_env = {**environment(layout(args.baseline, root / "baseline-code")), "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}
    for case in cases:
        folder = root / case.name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        if case.needs_root and os.geteuid() != 0:
            print(f"{case.name:<22} {'':>7} {'':>7} {'':>8} {'':>4}  skipped: mounting a small tmpfs needs root", flush=True)
            continue
        command, expected, check = case.make(folder)
        result = run(command, CURRENT_ENV, None)
        problem = check(result, folder) if result.code == expected else f"exit {result.code}, expected {expected}"
        if problem is None and case.target is not None and result.seconds > case.target:
            problem = f"over its target of {case.target:.0f} s"
        failures += problem is not None
        print(f"{case.name:<22} {result.seconds:7.2f} {result.cpu:7.2f} {result.rss_mb:8.0f} {result.code:>4}  "
              f"{'ok' if problem is None else 'NOT OK: ' + problem} — {case.what}", flush=True)
        if case.timed and baseline_env is not None:
            base_folder = root / f"{case.name}-baseline"
            shutil.rmtree(base_folder, ignore_errors=True)
            base_folder.mkdir()
            base_command, _, _ = case.make(base_folder)
            old = run(base_command, baseline_env, args.baseline_timeout)
            stopped = old.code == -1
            print(f"{'  ' + args.baseline:<22} {old.seconds:7.2f} {old.cpu:7.2f} {old.rss_mb:8.0f} "
                  f"{'-' if stopped else old.code:>4}  {'stopped: ' if stopped else ''}"
                  f"{'≥ ' if stopped else ''}{old.seconds / result.seconds:.1f}× the time of today's code", flush=True)
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{len(cases) - failures} of {len(cases)} cases handled as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
