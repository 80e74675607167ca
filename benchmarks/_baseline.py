"""Today's code beside this checkout's, for benchmarks that measure old and new in the same run.

:func:`layout` checks a git revision of this repository out (``git archive``) and lays it out as
the installed package is laid out (``simweb``, ``simweb.core`` from ``simcore/``, …, as
pyproject.toml's package-dir says); with that folder first on ``PYTHONPATH`` a Python process
and every process it starts (Dask workers) import that revision's ``simweb`` instead of this
checkout's editable install, with the same third-party packages. The revision's compiled
extensions are built from its own C sources (``setup.py build_ext``); where that fails (no
compiler), they are copied from this checkout where their C source is the same at both revisions,
and the revision's pure-Python twins run for the others.
"""
from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The commit before the bounded-memory bags stage (issue 15): the code the benchmarks compare with.
BASELINE = "de77450"
# pyproject.toml [tool.setuptools.package-dir]: package → folder of the repository.
PACKAGES = {"simweb": "simweb", "simweb/core": "simcore", "simweb/tasks": "tasks", "simweb/flows": "flows",
            "simweb/deployments": "deployments", "simweb/corpora": "corpora"}


def layout(rev: str, into: Path) -> Path:
    """``rev``'s package laid out under ``into`` (created); returns ``into``, for ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", rev], check=True,
                             capture_output=True).stdout
    source = into / "_source"
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(source, filter="data")
    built_here = (source / "setup.py").exists() and subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=source, capture_output=True).returncode == 0
    for package, folder in sorted(PACKAGES.items()):  # parents before children
        shutil.copytree(source / folder, into / package, dirs_exist_ok=True)
    for built in (ROOT / "simcore").glob("_*.so") if not built_here else ():
        c_source = built.name.split(".", 1)[0] + ".c"
        theirs = source / "simcore" / c_source
        if theirs.exists() and theirs.read_bytes() == (ROOT / "simcore" / c_source).read_bytes():
            shutil.copy2(built, into / "simweb" / "core" / built.name)
    shutil.rmtree(source)
    return into


def environment(path: Path | None) -> dict[str, str]:
    """This process's environment with ``path`` (a :func:`layout`) first on PYTHONPATH; None: unchanged."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(path), *filter(None, [env.get("PYTHONPATH")])])
    return env
