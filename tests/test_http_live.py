"""The real server (uvicorn on 127.0.0.1) while the index folder changes under it: versions
published as it answers, CURRENT removed, dangling, truncated, unreadable or naming an
incomplete version, and the version it serves pruned from disk while open."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request

from conftest import build_small_index
from simweb.tasks import index_store as store
from test_http import start_server

JAVA1 = "http://java1.example.com/"
MUSIC1 = "http://music1.example.com/"

# One request of each kind to every endpoint, and the status each must answer, whatever CURRENT says.
REQUESTS = (
    ("GET", f"/api/related?url={JAVA1}&top=5", None, 200),
    ("GET", f"/api/related?url={JAVA1}&rerank=true", None, 200),  # reads the bags
    ("POST", "/api/related", {"urls": [JAVA1, MUSIC1], "top": 4}, 200),
    ("GET", f"/api/terms?url={JAVA1}&k=5", None, 200),  # reads the bags
    ("GET", f"/?url={JAVA1}", None, 200),
    ("GET", "/api/related?url=http://nowhere.example.com/", None, 404),
    ("POST", "/api/related", {"urls": ["http://nowhere.example.com/"]}, 404),
    ("GET", f"/api/related?url={JAVA1}&top=0", None, 422),
    ("GET", f"/api/terms?url={JAVA1}&k=many", None, 422),
    ("POST", "/api/related", {"urls": []}, 422),
    ("GET", "/api/nothing", None, 404),
)
STATUSES = [status for *_, status in REQUESTS]


def ask(base: str, method: str, path: str, body) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def answers(base: str) -> list[tuple[int, bytes]]:
    return [unversioned(*ask(base, method, path, body)) for method, path, body, _ in REQUESTS]


def unversioned(status: int, body: bytes) -> tuple[int, bytes]:
    """The answer with the name of the version that gave it cut to its last letter: the same
    index is published under many names here, each ending in its letter, a or b."""
    try:
        doc = json.loads(body)
    except ValueError:
        return status, body
    for answer in doc.get("answers", [doc]) if isinstance(doc, dict) else []:
        if "version" in answer:
            version = answer.pop("version")
            answer["index"] = version[-1]
    return status, json.dumps(doc).encode()


def info(base: str) -> dict:
    status, body = ask(base, "GET", "/api/info", None)
    assert status == 200
    return json.loads(body)


def warnings(log) -> list[str]:
    return [line for line in log.read_text().splitlines() if "still serving version" in line]


def test_the_server_answers_from_its_version_whatever_current_says(tmp_path):
    root = build_small_index(tmp_path / "a")
    build_small_index(tmp_path / "b", min_in_degree=None)  # a second index that answers differently
    source = {"a": str(tmp_path / "a" / "version"), "b": str(tmp_path / "b" / "version")}
    store.publish(source["a"], root, name="v-0000-a")
    current = os.path.join(root, store.CURRENT)
    log = tmp_path / "serve.log"
    proc, base = start_server(root, "--workers", "1", log=log)  # one process: each cause logged once
    try:
        expect = {"a": answers(base)}
        assert [s for s, _ in expect["a"]] == STATUSES
        store.publish(source["b"], root, name="v-0001-b")
        expect["b"] = answers(base)
        assert info(base)["version"] == "v-0001-b" and [s for s, _ in expect["b"]] == STATUSES
        assert expect["b"][:3] != expect["a"][:3]

        # Versions published while a client asks: every answer is one version's, whole; the
        # versions pruned meanwhile (two are kept) include ones the server had open.
        def publisher():
            for i in range(2, 10):
                store.publish(source["ab"[i % 2]], root, name=f"v-{i:04d}-{'ab'[i % 2]}")
                time.sleep(0.05)

        thread = threading.Thread(target=publisher)
        thread.start()
        rounds, deadline = 0, time.time() + 60
        while (thread.is_alive() or rounds < 2) and time.time() < deadline:
            for i, got in enumerate(answers(base)):
                assert got in (expect["a"][i], expect["b"][i]), REQUESTS[i]
            rounds += 1
        thread.join()
        assert rounds >= 2 and info(base)["version"] == "v-0009-b"
        assert not warnings(log)

        # CURRENT removed, dangling, truncated, unreadable, naming incomplete versions: the server
        # answers as before from v-0009-b, says so in /api/info, and logs each cause once.
        incomplete = os.path.join(root, store.VERSIONS, "v-incomplete")
        shutil.copytree(source["a"], incomplete)
        os.remove(os.path.join(incomplete, store.MANIFEST))
        no_h = os.path.join(root, store.VERSIONS, "v-no-h")
        shutil.copytree(source["a"], no_h)
        os.remove(os.path.join(no_h, store.H_FILE))
        faults = [  # what CURRENT holds (None: no CURRENT), what /api/info reads from it
            (None, None),
            (b"v-nope\n", "v-nope"),
            (b"", None),
            (b"v-00", "v-00"),
            (b"\xff\xfe\x00\x81", None),
            (b"v-incomplete\n", "v-incomplete"),
            (b"v-no-h\n", "v-no-h"),
        ]
        for n, (content, named) in enumerate(faults, 1):
            if content is None:
                os.remove(current)
            else:
                with open(current, "wb") as f:
                    f.write(content)
            for _ in range(3):
                assert answers(base) == expect["b"], content
            now = info(base)
            assert now["version"] == "v-0009-b" and now["path"] == "index"
            assert now["current"]["version"] == named and now["current"]["served"] is False
            assert now["current"]["problem"] and os.path.dirname(root) not in json.dumps(now)
            assert len(warnings(log)) == n, log.read_text()  # once per cause, not per request
        assert "v-no-h/H.u32: missing" in warnings(log)[-1]

        # The served version pruned from disk while open (CURRENT dangling, so the server keeps
        # it): its memory maps and its open handles on the bags files keep answering. Only
        # /api/info asks between the switch and the prune, so no bag was read before it.
        once = shutil.copytree(source["a"], tmp_path / "a-once")  # no other link to its files
        store.publish(str(once), root, name="v-0010-a")
        shutil.rmtree(once)
        assert info(base)["version"] == "v-0010-a"
        with open(current, "w") as f:
            f.write("v-gone\n")
        pruned = os.path.join(root, store.VERSIONS, "v-0010-a")
        shutil.rmtree(pruned)
        with open(f"/proc/{proc.pid}/maps") as f:
            assert f"{pruned}/{store.H_FILE} (deleted)" in f.read()
        for _ in range(2):
            assert answers(base) == expect["a"]
        assert info(base)["current"] == {"version": "v-gone", "served": False, "problem": info(base)["current"]["problem"]}

        # A complete version published again: served at the next request, the log says so.
        store.publish(source["b"], root, name="v-0011-b")
        assert answers(base) == expect["b"]
        assert info(base)["current"] == {"version": "v-0011-b", "served": True, "problem": None}
        assert log.read_text().splitlines()[-1].endswith("serving version v-0011-b")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
