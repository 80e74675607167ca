"""Crawls read from an object store and a web server, both real servers started here on
127.0.0.1: an S3-compatible store (moto's standalone server) and a web server with range
requests (http.server). Each remote crawl gives exactly the pages, links and skips that the
same files give read locally; a re-run reads no remote file again (the parts are named by
the store's ETag and size); a Common Crawl style paths list names files relative to a prefix.
"""
from __future__ import annotations

import gzip
import http.server
import json
import os
import re
import socket
import threading
from pathlib import Path

import pytest
from conftest import InjectedFailure, s3_store

from simweb.cli import main
from simweb.tasks.ingest.files import ingest_files
from simweb.tasks.sources import list_archive_files, read_paths_list
from simweb.tasks.storage import identify, read_parquet

s3fs = pytest.importorskip("s3fs")

FILES = ("warcfile.warc.gz", "example.warc.gz")  # 16 + 1 HTML pages
BUCKET = "crawls"


@pytest.fixture(scope="module")
def s3(shared_fixtures):
    """An S3-compatible store on 127.0.0.1 holding the fixtures under s3://crawls/cc/ (and a
    file that is no archive), with the environment a user sets for such a store."""
    with s3_store(BUCKET) as (client, _):
        for i, name in enumerate(FILES):
            client.put_object(Bucket=BUCKET, Key=f"cc/part{i}/{name}",
                              Body=(shared_fixtures / "warc" / name).read_bytes())
        client.put_object(Bucket=BUCKET, Key="cc/README.txt", Body=b"not a crawl")
        yield client


class _RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Files with Content-Length, an ETag and byte ranges, as web archives serve WARC files;
    ``reads`` lists the paths of the GET requests (HEAD requests only ask about a file)."""

    reads: list[str] = []

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        self.reads.append(self.path)
        super().do_GET()

    def send_head(self):
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404)
            return None
        size = os.path.getsize(path)
        start, end = 0, size - 1
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", "").strip())
        if wanted:
            start, end = int(wanted[1]), min(int(wanted[2] or size - 1), size - 1)
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        else:
            self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{size:x}-{os.stat(path).st_mtime_ns:x}"')
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(start)
            import io

            return io.BytesIO(f.read(end - start + 1))


@pytest.fixture(scope="module")
def web(shared_fixtures):
    """A web server on 127.0.0.1 serving ../shared/fixtures; yields its base URL."""
    handler = lambda *a, **kw: _RangeHandler(*a, directory=str(shared_fixtures), **kw)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def local(tmp_path_factory, warc_dir):
    """The same files ingested from the local disk: what every remote read must equal."""
    out = tmp_path_factory.mktemp("local")
    stats = ingest_files([str(warc_dir / name) for name in FILES], str(out))
    assert stats.pages_written == 17 and stats.files_read == 2 and not stats.file_errors
    return stats, sorted(read_parquet(str(out / "pages"), ["url"]).column("url").to_pylist())


def _same_as_local(stats, out: Path, local) -> None:
    expected, urls = local
    assert (stats.pages_written, stats.links_written, stats.records_read, stats.skipped) == (
        expected.pages_written, expected.links_written, expected.records_read, expected.skipped)
    assert sorted(read_parquet(str(out / "pages"), ["url"]).column("url").to_pylist()) == urls


def test_an_s3_prefix_and_glob_name_its_archive_files(s3):
    listed = [f"s3://{BUCKET}/cc/part0/warcfile.warc.gz", f"s3://{BUCKET}/cc/part1/example.warc.gz"]
    assert list_archive_files(f"s3://{BUCKET}/cc/") == listed
    assert list_archive_files(f"s3://{BUCKET}/cc/**/*.warc.gz") == listed
    assert list_archive_files(f"s3://{BUCKET}/cc/*/example*") == listed[1:]
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        list_archive_files(f"s3://{BUCKET}/elsewhere/")


def test_ingest_from_s3_equals_local_and_a_rerun_reads_nothing_again(s3, local, tmp_path, capsys, warc_dir):
    out = tmp_path / "data"
    assert main(["ingest", f"s3://{BUCKET}/cc/", "--out", str(out), "--no-prefect"]) == 0
    printed = capsys.readouterr()
    assert "2 archive files, " in printed.err and "in this process" in printed.err
    files = list_archive_files(f"s3://{BUCKET}/cc/")
    fresh = ingest_files(files, str(tmp_path / "fresh"))
    _same_as_local(fresh, tmp_path / "fresh", local)
    # The parts' stats name each object by its store's ETag and size, without reading it.
    saved = [json.loads(p.read_text()) for p in (out / "stats").glob("part-*.json")]
    assert sorted(s["source"] for s in saved) == sorted(files)
    assert all(s["ETag"] and s["size"] and "sha256" not in s for s in saved)
    assert {identify(f).digest for f in files} == {s["identity"] for s in saved}

    rerun = ingest_files(files, str(out))
    assert (rerun.files_unchanged, rerun.files_read, rerun.pages_unchanged) == (2, 0, 17)
    # The same bytes uploaded again keep their ETag (an MD5 of the bytes): still unchanged.
    example = (warc_dir / "example.warc.gz").read_bytes()
    s3.put_object(Bucket=BUCKET, Key="cc/part1/example.warc.gz", Body=example)
    assert ingest_files(files, str(out)).files_unchanged == 2
    # An object replaced by other bytes is another file: read again.
    s3.put_object(Bucket=BUCKET, Key="cc/part1/example.warc.gz", Body=example + example)
    changed = ingest_files(files, str(out))
    s3.put_object(Bucket=BUCKET, Key="cc/part1/example.warc.gz", Body=example)  # as the other tests expect
    assert (changed.files_unchanged, changed.files_read, changed.pages_written) == (1, 1, 1)


def test_a_wacz_on_the_store_is_read_from_inside_it(s3, local, warc_dir, tmp_path):
    import io
    import zipfile

    package = io.BytesIO()
    with zipfile.ZipFile(package, "w", compression=zipfile.ZIP_STORED) as z:
        z.writestr("datapackage.json", "{}")
        for name in FILES:
            z.write(warc_dir / name, f"archive/{name}")
    s3.put_object(Bucket=BUCKET, Key="packages/site.wacz", Body=package.getvalue())
    url = f"s3://{BUCKET}/packages/site.wacz"
    members = [f"zip://archive/{name}::{url}" for name in sorted(FILES)]
    assert list_archive_files(url) == members
    assert list_archive_files(f"s3://{BUCKET}/packages/") == members
    stats = ingest_files(members, str(tmp_path / "data"))
    _same_as_local(stats, tmp_path / "data", local)
    assert not stats.file_errors


def test_build_from_a_paths_list_with_a_web_prefix(web, local, tmp_path, capsys):
    paths = tmp_path / "warc.paths.gz"
    paths.write_bytes(gzip.compress("".join(f"warc/{name}\n" for name in FILES).encode()))
    assert read_paths_list(str(paths), web + "/") == [f"{web}/warc/{name}" for name in FILES]
    out = tmp_path / "index"
    code = main(["build", "--paths-list", str(paths), "--paths-prefix", web + "/", "--out", str(out),
                 "--no-prefect", "--min-in-degree", "-1", "--json"])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    built = json.loads(printed.out)
    assert built["index"] and built["ingest"]["pages_written"] == 17
    # The same build from the local files: the same pages and links.
    from simweb.tasks.ingest.stats import IngestStats

    _same_as_local(IngestStats.from_dict(built["ingest"]), out / "crawl", local)
    # Built again: no file is read again (its server is only asked for its ETag and size).
    _RangeHandler.reads.clear()
    again = main(["build", "--paths-list", str(paths), "--paths-prefix", web + "/", "--out", str(out),
                  "--no-prefect", "--min-in-degree", "-1", "--json"])
    assert _RangeHandler.reads == []
    rebuilt = json.loads(capsys.readouterr().out)
    assert again == 0 and rebuilt["ingest"]["files_unchanged"] == 2 and rebuilt["ingest"]["files_read"] == 0
    assert all(stage["reused"] for stage in rebuilt["stages"].values())


def test_ingest_into_an_object_store(s3, local, warc_dir, tmp_path, capsys):
    out = f"s3://{BUCKET}/ingested"
    warcs = [str(warc_dir / name) for name in FILES]
    assert main(["ingest", *warcs, "--out", out, "--no-prefect"]) == 0
    capsys.readouterr()
    assert sorted(read_parquet(f"{out}/pages", ["url"]).column("url").to_pylist()) == local[1]
    rerun = ingest_files(warcs, out)
    assert (rerun.files_unchanged, rerun.pages_unchanged) == (2, 17)


@pytest.mark.parametrize("case, argv, expected", [
    ("index on a store", ["build", "{warc}", "--out", "s3://crawls/index"],
     r"--out s3://crawls/index: an index is written to a local folder"),
    ("relative list, no prefix", ["build", "--paths-list", "{tmp}/warc.paths", "--out", "{tmp}/i"],
     r"line 1 \(warc/warcfile.warc.gz\) is a relative path; give the prefix .*--paths-prefix.* https://data.commoncrawl.org/"),
    ("prefix without list", ["ingest", "{warc}", "--paths-prefix", "{web}/", "--out", "{tmp}/i"],
     "--paths-prefix joins the lines of --paths-list: give --paths-list FILE too"),
    ("missing list", ["ingest", "--paths-list", "{tmp}/gone.paths.gz", "--out", "{tmp}/i"],
     "--paths-list .*gone.paths.gz: no such file; expected a list of WARC or ARC paths"),
    ("list not on the web server", ["ingest", "--paths-list", "{web}/warc/gone.paths.gz", "--out", "{tmp}/i"],
     "paths list http://127.0.0.1:.*/warc/gone.paths.gz: no such file; expected a list of WARC or ARC paths"),
    ("empty list", ["ingest", "--paths-list", "{tmp}/empty.paths", "--out", "{tmp}/i"],
     "names no file; expected one WARC or ARC path per line"),
    ("nothing named", ["build", "--out", "{tmp}/i"], "no crawl named; expected WARC or ARC files"),
    ("not on the web server", ["ingest", "{web}/warc/gone.warc.gz", "--out", "{tmp}/i"],
     "gone.warc.gz: the web server has no such file; expected the URL of a WARC or ARC file"),
    ("not in the bucket", ["ingest", "s3://crawls/nothing-here/", "--out", "{tmp}/i"],
     "s3://crawls/nothing-here/: no such file or folder"),
    ("web server down", ["build", "{dead}/crawl.warc.gz", "--out", "{tmp}/i"],
     r"crawl.warc.gz: cannot be read from its web server \(ClientConnectorError: .*check the URL and that the "
     "server is reachable"),
    ("store down", ["ingest", "s3://crawls/cc/", "--out", "{tmp}/i"],
     r"s3://crawls/cc/: cannot be listed or read \(EndpointConnectionError: .*AWS_ENDPOINT_URL"),
])
def test_remote_inputs_refused_in_one_line(case, argv, expected, s3, web, warc_dir, tmp_path, capsys, monkeypatch):
    (tmp_path / "warc.paths").write_text("# a Common Crawl style list\nwarc/warcfile.warc.gz\n")
    (tmp_path / "empty.paths").write_text("\n# nothing\n")
    with socket.socket() as probe:  # a port on 127.0.0.1 that nothing listens on
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    if case == "store down":
        monkeypatch.setenv("AWS_ENDPOINT_URL", dead)
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
        s3fs.S3FileSystem.clear_instance_cache()
        monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
    given = {"tmp": str(tmp_path), "warc": str(warc_dir / "example.warc.gz"), "web": web, "dead": dead}
    try:
        code = main([a.format(**given) for a in argv])
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert re.search(expected, err[-1]), err
    assert "Traceback" not in "\n".join(err)


def test_a_web_servers_passing_failures_are_retried_and_its_refusals_are_not():
    aiohttp = pytest.importorskip("aiohttp")
    from simweb.tasks.ingest.retries import is_transient_io_error

    def answer(status: int):
        return aiohttp.ClientResponseError(None, (), status=status)

    assert all(is_transient_io_error(e) for e in (answer(503), answer(429), aiohttp.ServerDisconnectedError(),
                                                  aiohttp.ClientPayloadError("cut short")))
    assert not any(is_transient_io_error(e) for e in (answer(403), answer(401), answer(416)))


@pytest.mark.slow
def test_a_prefect_ingest_reads_the_store_from_its_dask_workers(s3, local, tmp_path):
    """`simweb ingest s3://… --prefect --workers 2`: the files are read by two Dask worker
    processes (which get the store's endpoint and keys from the environment): the same pages."""
    import subprocess
    import sys

    out = tmp_path / "data"
    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect-home")}
    done = subprocess.run([sys.executable, "-m", "simweb", "ingest", f"s3://{BUCKET}/cc/", "--out", str(out),
                           "--prefect", "--workers", "2"], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    assert sorted(read_parquet(str(out / "pages"), ["url"]).column("url").to_pylist()) == local[1]


def test_the_build_index_flow_takes_a_paths_list(web, tmp_path):
    """For deployments: the flow's own paths_list and paths_prefix parameters, the crawl empty."""
    from simweb.flows.build_index import build_index

    paths = tmp_path / "warc.paths"
    paths.write_text(f"warc/{FILES[0]}\n{web}/warc/{FILES[1]}\n")  # a relative line and a URL
    built = build_index.fn([], str(tmp_path / "index"), until="ingest", paths_list=str(paths),
                           paths_prefix=web)
    assert (built.ingest.files_read, built.ingest.pages_written) == (2, 17)


def test_an_inbox_on_the_store_is_known_by_etag(s3, tmp_path):
    """ingest-new-crawl's inbox may be a store prefix: its files are named by ETag and size,
    so one already ingested is not new again, and the same bytes under another key are a duplicate."""
    from simweb.tasks.ledger import record_ingestion, scan_inbox

    inbox, crawl = f"s3://{BUCKET}/inbox", str(tmp_path / "crawl")
    body = s3.get_object(Bucket=BUCKET, Key="cc/part1/example.warc.gz")["Body"].read()
    for key in ("inbox/a.warc.gz", "inbox/copy-of-a.warc.gz"):
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    first = scan_inbox(inbox, crawl, settle_seconds=0)
    assert [f.name for f in first.new] == ["a.warc.gz"] and [f.name for f in first.duplicates] == ["copy-of-a.warc.gz"]
    assert first.new[0].digest == identify(f"s3://{BUCKET}/cc/part1/example.warc.gz").digest
    record_ingestion(crawl, [(first.new[0], {"part": "x"}, None)])
    again = scan_inbox(inbox, crawl, settle_seconds=0)
    assert (len(again.new), len(again.already)) == (0, 2)


def test_a_build_keeps_its_crawl_and_stage_outputs_on_the_store(s3, warc_dir, tmp_path, capsys, index_diff):
    """`simweb build … --work s3://…`: the ingested crawl and every stage output are written to the
    store, the index (memory-mapped by queries) to the local folder — the same index as a build kept
    wholly on the local disk. The index remembers its work folder: built again without naming it,
    every stage is reused from the store; `simweb verify` checks what is there and finds what is lost."""
    from simweb.tasks import index_store
    from simweb.tasks.layout import stages_folder

    warcs = [str(warc_dir / name) for name in FILES]
    out, work = tmp_path / "index", f"s3://{BUCKET}/work"
    assert main(["build", *warcs, "--out", str(out), "--work", work, "--no-prefect", "--json"]) == 0
    built = json.loads(capsys.readouterr().out)
    assert main(["build", *warcs, "--out", str(tmp_path / "on-disk"), "--no-prefect"]) == 0
    capsys.readouterr()
    assert index_diff(index_store.resolve(str(out)), index_store.resolve(str(tmp_path / "on-disk"))) == []
    assert (out / "WORK").read_text().strip() == work and not (out / "crawl").exists() and not (out / "stages").exists()
    table = built["stages"].pop("related-table")  # kept in the published version, which is local
    assert table["path"] == index_store.resolve(str(out)) and not table["reused"]
    assert all(stage["path"].startswith(f"{work}/stages/") for stage in built["stages"].values())
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="work/")["Contents"]]
    assert any(k.startswith("work/crawl/pages/part-") for k in keys) and not any("/.tmp-" in k for k in keys)

    assert main(["build", *warcs, "--out", str(out), "--no-prefect", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["ingest"]["files_unchanged"] == 2 and all(stage["reused"] for stage in again["stages"].values())

    assert main(["verify", str(out)]) == 0
    assert capsys.readouterr().out.strip().endswith("0 damaged")
    signed = built["stages"]["signatures"]["path"]
    s3.delete_object(Bucket=BUCKET, Key=f"{signed.split('/', 3)[3]}/{index_store.H_FILE}")
    assert main(["verify", str(out)]) == 1
    said = capsys.readouterr().out
    assert f"damaged: stage output {signed}: {index_store.H_FILE} is missing" in said
    assert main(["verify", str(out), "--repair"]) == 0
    assert f"removed {signed}" in capsys.readouterr().out
    assert stages_folder(str(out)) == f"{work}/stages"


def test_a_work_folder_the_store_does_not_have_is_refused_in_one_line(s3, warc_dir, tmp_path, capsys):
    code = main(["build", str(warc_dir / FILES[1]), "--out", str(tmp_path / "i"), "--work", "s3://no-such-bucket/w",
                 "--no-prefect"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and "Traceback" not in "\n".join(err)
    assert re.search(r"--work s3://no-such-bucket/w: cannot be listed \(.*the bucket must exist", err[-1]), err
    assert not (tmp_path / "i" / "WORK").exists()


def test_an_inbox_update_of_an_index_whose_work_is_on_the_store(s3, warc_dir, tmp_path, capsys, index_diff):
    """ingest-new-crawl on an index built with --work s3://…: the new file's pages go to the crawl
    on the store, the update's stage outputs too, and the index is updated in place (its df epoch
    kept) — the same index as the same update of an index kept wholly on the local disk."""
    import shutil

    from simweb.flows.ingest_new_crawl import ingest_new_crawl

    indexes = {"store": (tmp_path / "index", ["--work", f"s3://{BUCKET}/inbox-work"]), "disk": (tmp_path / "disk", [])}
    updates = {}
    for name, (out, work) in indexes.items():
        assert main(["build", str(warc_dir / FILES[0]), "--out", str(out), *work, "--no-prefect"]) == 0
        inbox = tmp_path / f"inbox-{name}"
        inbox.mkdir()
        shutil.copy(warc_dir / FILES[1], inbox / FILES[1])
        updates[name] = ingest_new_crawl.fn(str(inbox), str(out), settle_seconds=0)
    capsys.readouterr()
    done = updates["store"]
    assert done.ingested == [FILES[1]] and done.stages == {"delta-bags": False, "delta-index": False,
                                                           "related-table": False}
    assert index_diff(done.index, updates["disk"].index) == [], (updates["disk"], done)
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="inbox-work/")["Contents"]]
    assert any(k.startswith("inbox-work/stages/delta-index/") and k.endswith("/_SUCCESS.json") for k in keys)
    assert not (tmp_path / "index" / "crawl").exists() and not (tmp_path / "index" / "stages").exists()


def test_a_build_failed_in_a_late_stage_on_the_store_resumes_there(s3, warc_dir, tmp_path, capsys, fail_stage):
    """A build whose work is on the store fails inside the invert stage after writing its files:
    nothing of that stage is published there (no manifest, its temporary folder removed), and the
    next build reuses the ingest, bags and signatures from the store and computes only the invert."""
    warcs = [str(warc_dir / name) for name in FILES]
    out, work = tmp_path / "index", f"s3://{BUCKET}/resumed"
    fail_stage.add("invert")
    with pytest.raises(InjectedFailure, match="stage invert: failing on purpose"):
        main(["build", *warcs, "--out", str(out), "--work", work, "--no-prefect"])
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET, Prefix="resumed/stages/invert/").get("Contents", [])]
    assert keys == []
    fail_stage.clear()
    capsys.readouterr()
    assert main(["build", *warcs, "--out", str(out), "--no-prefect", "--json"]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["ingest"]["files_unchanged"] == 2
    assert {name: stage["reused"] for name, stage in resumed["stages"].items()} == {
        "bags": True, "signatures": True, "invert": False, "related-table": False}


def test_a_file_read_in_pieces_from_and_into_the_store(s3, tmp_path):
    """A file on the store read in three pieces (as large files are, on several workers), its
    parts written to the store and finished there: the pages of the file read whole, nothing
    left of the pieces' records, and a later reading of the whole file finds it done."""
    from simweb.tasks.ingest.files import finish_pieces, ingest_warc
    from simweb.tasks.storage import filesystem

    src, out = f"s3://{BUCKET}/cc/part0/warcfile.warc.gz", f"s3://{BUCKET}/in-pieces"
    pieces = [ingest_warc(src, out, (k, 3)) for k in range(3)]
    done = finish_pieces(src, out, 3, pieces[0].parts[0])
    whole = ingest_files([src], str(tmp_path / "whole"))
    assert (done.files_read, done.records_read, done.pages_written, done.parts) == (
        1, whole.records_read, whole.pages_written, whole.parts)
    urls = read_parquet(f"{out}/pages", ["url"]).column("url").to_pylist()
    assert sorted(urls) == sorted(read_parquet(str(tmp_path / "whole" / "pages"), ["url"]).column("url").to_pylist())
    fs, root = filesystem(out)
    assert len(fs.ls(f"{root}/pages")) == 3 and not fs.exists(f"{root}/pieces/{pieces[0].parts[0]}.1of3.json")
    assert ingest_files([src], out).files_unchanged == 1
