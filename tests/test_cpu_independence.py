"""The same crawl gives the same bags, signatures and index on every CPU.

numpy chooses its vector code (SSE, AVX2, AVX-512) by the CPU it runs on, and its paths for
log and exp differ in the last bits; before simweb.core.fpmath, an AVX-512 machine built other
bag weights than an AVX2 one. This test builds the shared fixtures' bags (in memory and by the
bags stage), signs them (ICWS; DartMinHash in C and in its numpy twin, which must agree) and
inverts them — once in this process, and once in a fresh process for each narrower set of
numpy's dispatch targets this machine has (``NPY_DISABLE_CPU_FEATURES``) — and requires the outputs to be identical to the bit. On a machine with AVX-512 that is three
builds (AVX-512, AVX2, the baseline), so the suite catches a CPU-dependent weight wherever it
runs; ``../shared/tools/fresh-ci`` accepts the same variable to run the whole suite on a
narrower path.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
STRATEGIES = (
    "anchor:32+content,stem,dist,nmdf",
    "anchor:32,stopstem,nodist",
    "anchor:16+content,nostem,sqrt",
    "anchor:8+links,stem,dist,log",
)


def _weights_digest(matrix) -> str:
    """A digest of every (URL, term, weight) of a bag matrix, weights to the last bit."""
    h = hashlib.sha256()
    for u, (url, bag) in sorted(matrix.to_dicts().items()):
        h.update(f"{u} {url}\n".encode())
        for term, weight in sorted(bag.items()):
            h.update(f"{term} {float(weight).hex()}\n".encode())
    return h.hexdigest()[:16]


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _signature_digests(matrix) -> dict[str, str]:
    """Digests of the bags' ICWS signatures and of their DartMinHash signatures from the C
    extension and from its numpy twin (m = 80, seed 1)."""
    from simweb.core import dartminhash
    from simweb.core.minhash import EMPTY, MinHashParams, sign, term_hashes

    csr = matrix.csr.tocsr()
    csr.sort_indices()
    args = (csr.indices.astype(np.int64), csr.indptr.astype(np.int64), term_hashes(matrix.vocabulary), csr.data)
    icws = sign(*args, MinHashParams(algorithm="icws")).values
    digests = {"icws signatures": hashlib.sha256(icws.tobytes()).hexdigest()[:16]}
    signers = {"numpy": dartminhash.sign_darts_numpy}
    if dartminhash._c_sign is not None:
        signers["C"] = dartminhash.sign_darts
    for name, signer in signers.items():
        values = np.full((csr.shape[0], 80), EMPTY, dtype=np.uint32)
        signer(*args, 80, 1, values)
        digests[f"dart signatures ({name})"] = hashlib.sha256(values.tobytes()).hexdigest()[:16]
    return digests


def build_and_digest(warc_dir: Path, out: Path) -> dict[str, str]:
    """Ingest, bags (in memory and by the stage), signatures (ICWS; DartMinHash in C and numpy, and
    by the signatures stage) and invert; a digest of each output."""
    from simweb.core.minhash import MinHashParams
    from simweb.core.strategy import Strategy
    from simweb.tasks.bag_reader import read_bags
    from simweb.tasks.stages.bags import build_bags_stage
    from simweb.tasks.crawl.corpus import load_corpus
    from simweb.tasks.ingest.files import ingest_files
    from simweb.tasks.signatures import signatures, write_index_version

    warcs = sorted(warc_dir.glob("*.warc.gz")) + sorted(warc_dir.glob("*.warc"))
    crawl = out / "crawl"
    ingest_files([str(p) for p in warcs], str(crawl))
    corpus = load_corpus(str(crawl))
    digests = {f"bags {spec}": _weights_digest(corpus.bags(Strategy.parse(spec))) for spec in STRATEGIES}
    staged = build_bags_stage(str(crawl), Strategy(), str(out / "stages"), scheduler="sync")
    digests["bags stage"] = _weights_digest(read_bags(staged.path))
    digests.update(_signature_digests(read_bags(staged.path)))
    signed, version = out / "signed", out / "version"
    signatures(staged.path, str(signed), MinHashParams(m=32, algorithm="dart"), pages=str(crawl / "pages"),
               links=str(crawl / "links"))
    write_index_version(str(signed), str(version), min_in_degree=0)
    for name in sorted(os.listdir(version)):
        if name.startswith(("H.", "I.", "urls.")):
            digests[name] = _file_digest(version / name)
    return digests


def dispatch_settings() -> dict[str, str]:
    """``NPY_DISABLE_CPU_FEATURES`` values for each narrower dispatch path this machine has."""
    from numpy._core import _multiarray_umath as umath

    found = [f for f in umath.__cpu_dispatch__ if umath.__cpu_features__.get(f)]
    settings = {}
    wide = [f for f in found if f == "X86_V4" or f.startswith("AVX512")]
    if wide:
        settings["without AVX-512"] = " ".join(wide)
    if found and len(found) > len(wide):
        settings["baseline only"] = " ".join(found)
    return settings


@pytest.mark.skipif(not hasattr(np, "_core"), reason="numpy < 2 has no _core dispatch table to read")
def test_every_dispatch_path_builds_the_same_bags_signatures_and_index(warc_dir, tmp_path):
    here = build_and_digest(warc_dir, tmp_path / "default")
    assert len(here) >= len(STRATEGIES) + 7
    assert here.get("dart signatures (C)", here["dart signatures (numpy)"]) == here["dart signatures (numpy)"]
    for name, disabled in dispatch_settings().items():
        env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": disabled}
        out = tmp_path / name.replace(" ", "-")
        run = subprocess.run([sys.executable, __file__, str(warc_dir), str(out)], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        there = json.loads(run.stdout.strip().splitlines()[-1])
        assert there == here, f"{name} ({disabled}) built different outputs: " + ", ".join(
            k for k in here if here[k] != there.get(k))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    print(json.dumps(build_and_digest(Path(sys.argv[1]), Path(sys.argv[2]))))
