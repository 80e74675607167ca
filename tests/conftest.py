"""Shared test set-up: quiet Prefect, the real third-party fixtures in ../shared/fixtures."""
from __future__ import annotations

import logging
import os
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """../shared/fixtures: real WARC files and a DMOZ excerpt (read in place, never copied)."""
    if not SHARED_FIXTURES.is_dir():
        pytest.fail(f"expected the shared fixtures at {SHARED_FIXTURES}; clone the project beside ../shared")
    return SHARED_FIXTURES


@pytest.fixture(scope="session")
def warc_dir(shared_fixtures: Path) -> Path:
    return shared_fixtures / "warc"


class InjectedFailure(RuntimeError):
    """The failure the ``fail_stage`` fixture makes a stage raise."""


@pytest.fixture
def fail_stage(monkeypatch) -> set[str]:
    """Names of stages to fail once their output is written, before it is published (a crash
    inside a late stage of a real build). Add names to the returned set; clear it to let them finish."""
    from simweb.tasks import stagecache

    failing: set[str] = set()
    publish = stagecache._publish

    def failing_publish(tmp, final, manifest):
        if manifest["stage"] in failing:
            raise InjectedFailure(f"stage {manifest['stage']}: failing on purpose after writing its output")
        return publish(tmp, final, manifest)

    monkeypatch.setattr(stagecache, "_publish", failing_publish)
    return failing


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """A throw-away Prefect API (its own database) for tests that run flows."""
    os.environ["PREFECT_HOME"] = str(tmp_path_factory.mktemp("prefect-home"))
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


def drain_prefect_queues(timeout: float = 60.0) -> None:
    """Send what this process still holds for the Prefect API (run logs, events) before the
    server goes: at exit the client would otherwise keep trying a stopped server with hundreds
    of items (a task run per stage makes many), and the test process lingers."""
    from prefect.events.worker import EventsWorker
    from prefect.logging.handlers import APILogWorker

    for worker in (APILogWorker, EventsWorker):
        worker.drain_all(timeout=timeout)


@pytest.fixture(scope="module")
def prefect_api(tmp_path_factory):
    """A real `prefect server start` on 127.0.0.1 (its own database) that this process's flows
    report to; its API URL."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from simweb.deployments.server import LocalPrefectServer

    with LocalPrefectServer(prefect_home=tmp_path_factory.mktemp("prefect-home")) as server:
        with temporary_settings({PREFECT_API_URL: server.api_url}):
            yield server.api_url
            drain_prefect_queues()


# --- A small related-pages index (signatures + invert stages over synthetic BAGS) -----------

INDEX_TOPICS = {
    "java": "java jdk applet servlet bean swing compiler bytecode jvm class interface thread",
    "music": "music audio song artist band album record guitar radio concert singer vinyl",
    "money": "money finance stock market invest bank fund bond trade broker loan credit",
    "weather": "weather forecast rain storm climate snow wind radar temperature cloud sun sky",
}


def write_synthetic_crawl(root: Path, *, per_topic: int = 12, seed: int = 7) -> dict[str, str]:
    """BAGS, PAGES and LINKS Parquet folders for a tiny web of topic clusters (no WARC needed).

    Page ``http://<topic><i>.example.com/`` draws most of its terms from its topic's vocabulary,
    so pages of one topic are similar and pages of different topics are not. Page 0 of every
    topic has in-degree 1 (left out of I by the default filter), the others in-degree 4..7.
    """
    import numpy as np
    import pyarrow as pa

    from simweb.core.urls import url_id
    from simweb.tasks.schemas import BAGS, LINKS, PAGES
    from simweb.tasks.storage import write_parquet_atomic

    rng = np.random.default_rng(seed)
    noise = [f"noise{i}" for i in range(200)]
    bags, pages, links = [], [], []
    for topic, words in INDEX_TOPICS.items():
        vocab = words.split()
        for i in range(per_topic):
            url = f"http://{topic}{i}.example.com/"
            chosen = set(rng.choice(vocab, size=9, replace=False)) | set(rng.choice(noise, size=3, replace=False))
            terms = sorted(chosen)
            w = rng.random(len(terms)) + 0.2
            w = w / w.sum()
            bags.append({"url_id": url_id(url), "url": url, "terms": terms, "weights": w.astype(np.float32).tolist()})
            pages.append({"url": url, "url_id": url_id(url), "title": f"{topic.title()} page {i}",
                          "title_words": [topic], "words": terms, "status": 200, "content_type": "text/html",
                          "charset": "utf-8", "source_file": "synthetic.warc.gz", "record_offset": 0,
                          "record_length": 0, "surt": "", "timestamp": "", "digest": "-"})
            for s in range(1 if i == 0 else 4 + i % 4):
                src = f"http://hub{s}.example.org/{topic}"
                links.append({"source_url": src, "source_id": url_id(src), "target_url": url, "target_id": url_id(url),
                              # the hub pages are not crawled: no context words to point at
                              "anchor_start": 0, "anchor_end": 0, "context_start": 0, "context_end": 0,
                              "syntactic_left": 0, "syntactic_right": 0, "topical_left": 0, "topical_right": 0})
    half = len(bags) // 2
    out = {"bags": str(root / "bags"), "pages": str(root / "pages"), "links": str(root / "links")}
    write_parquet_atomic(pa.Table.from_pylist(bags[:half], schema=BAGS), out["bags"] + "/part-00000.parquet")
    write_parquet_atomic(pa.Table.from_pylist(bags[half:], schema=BAGS), out["bags"] + "/part-00001.parquet")
    write_parquet_atomic(pa.Table.from_pylist(pages, schema=PAGES), out["pages"] + "/part-0.parquet")
    write_parquet_atomic(pa.Table.from_pylist(links, schema=LINKS), out["links"] + "/part-0.parquet")
    return out


def build_small_index(root: Path, *, min_in_degree: int | None = 3, directory: str | None = None) -> str:
    """Run the signatures and invert stages on the synthetic crawl and publish to root/index."""
    from simweb.tasks import index_store
    from simweb.tasks.signatures import signatures, write_index_version

    crawl = write_synthetic_crawl(root / "crawl")
    signatures(crawl["bags"], str(root / "signed"), pages=crawl["pages"], links=crawl["links"], directory=directory)
    write_index_version(str(root / "signed"), str(root / "version"), min_in_degree=min_in_degree)
    index_store.publish(str(root / "version"), str(root / "index"))
    return str(root / "index")


@pytest.fixture(scope="session")
def small_index(tmp_path_factory) -> str:
    """A published index of the synthetic crawl (48 pages in 4 topics), built once per session."""
    return build_small_index(tmp_path_factory.mktemp("small-index"))


# --- The build-index stages called directly, in this process (no Prefect, no Dask cluster) ----


@pytest.fixture(scope="session")
def build_in_process():
    """``build(crawl, out, **params) -> live index folder``: the stages of build-index run one
    after another in this process — the reference a flow run (served, on a cluster, resumed,
    incremental) must equal."""

    def build(crawl, out, *, strategy=None, m: int = 80, seed: int = 1, min_in_degree: int | None = 3,
              directory: str | None = None) -> str:
        from simweb.core.strategy import Strategy
        from simweb.tasks.ingest.files import ingest_files
        from simweb.tasks.layout import crawl_folder
        from simweb.tasks.signatures import IndexParams
        from simweb.tasks.sources import list_archive_files
        from simweb.tasks.stages.bags import bags_stage
        from simweb.tasks.stages.invert import invert_stage
        from simweb.tasks.stages.publish import publish_index
        from simweb.tasks.stages.signatures import signatures_stage

        out = str(out)
        crawl = [str(c) for c in crawl] if isinstance(crawl, (list, tuple)) else str(crawl)
        params = IndexParams(m=m, seed=seed, min_in_degree=min_in_degree)
        strategy = strategy or Strategy()
        ingest_files(list_archive_files(crawl), crawl_folder(out))
        bags = bags_stage(crawl_folder(out), strategy, out)
        signed = signatures_stage(bags, crawl_folder(out), params, out, directory, metric=strategy.metric)
        return publish_index(invert_stage(signed, params, out), out)

    return build


INDEX_DATA_FILES = ("H.u32", "I.keys.u64", "I.docs.u32", "urls.u64", "urls.docs.u32", "docs.parquet")


@pytest.fixture(scope="session")
def index_diff():
    """``diff(a, b) -> [file, ...]``: the files on which two index versions differ (the manifest
    compared without its creation time); [] when they are the same index."""
    return _index_diff


def _index_diff(a: str, b: str) -> list[str]:
    import filecmp
    import json

    from simweb.tasks import index_store

    bags = tuple(sorted({f.file for v in (a, b) for f in index_store.bag_files(index_store.read_manifest(v))}))
    differ = [name for name in INDEX_DATA_FILES + ("I.offsets.u32",) + bags
              if os.path.exists(os.path.join(a, name)) or os.path.exists(os.path.join(b, name))
              if not (os.path.exists(os.path.join(a, name)) and os.path.exists(os.path.join(b, name))
                      and filecmp.cmp(os.path.join(a, name), os.path.join(b, name), shallow=False))]
    ma, mb = (dict(index_store.read_manifest(v)) for v in (a, b))
    for man in (ma, mb):  # when it was written, and what it was updated from, are not what it holds
        man.pop("created", None), man.pop("updated_from", None)
        man["files"] = {k: f for k, f in man["files"].items() if k != index_store.UPDATED_DOCS_FILE}
    if json.dumps(ma, sort_keys=True) != json.dumps(mb, sort_keys=True):
        differ.append(index_store.MANIFEST)
    return differ


# --- Debian packages built in the test (ar: debian-binary, control.tar.gz, data.tar.*) -------

DEB_MTIME = 1_767_225_600  # 2026-01-01T00:00:00Z


def _ar_member(name: str, data: bytes) -> bytes:
    header = f"{name:<16}{DEB_MTIME:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode("ascii")
    return header + data + (b"\n" if len(data) % 2 else b"")


def _tar(files: dict[str, bytes | None], mode: str) -> bytes:
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo("./" + name)
            info.mtime = DEB_MTIME
            if data is None:
                info.type, info.linkname = tarfile.SYMTYPE, "../../../javascript/jquery.js"
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def make_deb(folder: Path, package: str, version: str, files: dict[str, bytes | None], *,
             compression: str = "xz") -> Path:
    """A real Debian binary package holding ``files`` (path → bytes; None makes a symbolic link),
    its data archive compressed with ``compression`` ("xz", "gz", "bz2" or "" for none)."""
    control = f"Package: {package}\nVersion: {version}\nArchitecture: all\nMaintainer: T <t@example.org>\n" \
              "Description: test package\n"
    data_name = "data.tar" + (f".{compression}" if compression else "")
    data = (_ar_member("debian-binary", b"2.0\n")
            + _ar_member("control.tar.gz", _tar({"control": control.encode()}, "w:gz"))
            + _ar_member(data_name, _tar(files, f"w:{compression}")))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{package}_{version.replace(':', '%3a')}_all.deb"
    path.write_bytes(b"!<arch>\n" + data)
    return path


@contextmanager
def s3_store(*buckets: str):
    """An S3-compatible store on 127.0.0.1 (moto's standalone server) holding the empty
    ``buckets``, with the environment a user sets for such a store set in ``os.environ`` while
    it runs; yields (a boto3 client, that environment). Needs moto[s3] and s3fs (the dev extra).

    Moto keeps its stores' contents in the test process, shared by every server it starts: the
    store is emptied (moto's reset request) when it starts and when it stops, so that no test
    module sees another's objects."""
    moto_server = pytest.importorskip("moto.server", reason="the S3 tests need moto[s3] (simweb's dev extra)")
    boto3 = pytest.importorskip("boto3")
    s3fs = pytest.importorskip("s3fs")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()

    def empty_the_store() -> None:
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1, never a proxy
        direct.open(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST"), timeout=30).close()

    empty_the_store()
    env = {"AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_ACCESS_KEY_ID": "simweb-test",
           "AWS_SECRET_ACCESS_KEY": "simweb-test", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
           "AWS_EC2_METADATA_DISABLED": "true", "NO_PROXY": "127.0.0.1"}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(logging.getLogger("werkzeug"), "disabled", True)  # the store's request log
        for name, value in env.items():
            mp.setenv(name, value)
        s3fs.S3FileSystem.clear_instance_cache()
        client = boto3.client("s3")
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        try:
            yield client, env
        finally:
            s3fs.S3FileSystem.clear_instance_cache()
            empty_the_store()
            server.stop()
