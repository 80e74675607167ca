"""simweb installs as one package: its layers live inside simweb's namespace, never top-level."""
from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_a_users_own_tasks_flows_and_simcore_modules_do_not_shadow_simweb(tmp_path):
    for name in ("tasks", "flows", "deployments", "simcore", "corpora"):
        (tmp_path / f"{name}.py").write_text(f"MINE = {name!r}\n")
    code = (
        "import simweb, tasks, flows, deployments, simcore, corpora\n"
        "from simweb.tasks import ingest\n"
        "from simweb.flows import build_index\n"
        "from simweb.core import bags\n"
        "from simweb.corpora import debdocs\n"
        "assert tasks.MINE == 'tasks' and flows.MINE == 'flows' and simcore.MINE == 'simcore'\n"
        "assert corpora.MINE == 'corpora'\n"
        "assert simweb.Index.__name__ == 'Index' and simweb.Related.__name__ == 'Related'\n"
        "print('ok')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr[-2000:]


def test_version_and_python_dash_m():
    run = subprocess.run([sys.executable, "-m", "simweb", "--version"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip().startswith("simweb ")
    helped = subprocess.run([sys.executable, "-m", "simweb", "--help"], capture_output=True, text=True, timeout=120)
    assert "examples:" in helped.stdout and "simweb build" in helped.stdout


def test_the_wheel_holds_only_simweb(tmp_path):
    pytest.importorskip("setuptools")
    # Built from a copy of the tracked files, so the build leaves nothing in the work tree.
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    source = tmp_path / "source"
    for name in tracked:
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                          "-w", str(tmp_path), str(source)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    (wheel,) = tmp_path.glob("simweb-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"simweb", next(t for t in tops if t.endswith(".dist-info"))}, sorted(tops)
    for module in ("simweb/core/bags.py", "simweb/flows/build_index.py",
                   "simweb/deployments/definitions.py", "simweb/core/data/stoplist.txt",
                   "simweb/corpora/debdocs.py", "simweb/schemas/related-1.json"):
        assert module in names
    # Every module of every layer, those of its sub-packages too (each one listed in pyproject.toml).
    layers = {"simcore": "simweb/core", "tasks": "simweb/tasks", "flows": "simweb/flows",
              "deployments": "simweb/deployments", "corpora": "simweb/corpora", "simweb": "simweb"}
    missing = [name for name in tracked if name.endswith(".py") and name.split("/", 1)[0] in layers
               and f"{layers[name.split('/', 1)[0]]}/{name.split('/', 1)[1]}" not in names]
    assert not missing, f"not in the wheel: {missing}"


def _tracked_files() -> list[str]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    return subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()


def test_no_tracked_file_is_over_one_megabyte():
    # Corpora and tools are built or installed from the registries, never committed.
    large = [(name, (REPO / name).stat().st_size) for name in _tracked_files()
             if (REPO / name).is_file() and (REPO / name).stat().st_size > 1_000_000]
    assert large == []


def test_make_clean_removes_what_the_install_the_tests_and_the_demo_leave(tmp_path):
    if shutil.which("make") is None:
        pytest.skip("no make")
    shutil.copy2(REPO / "Makefile", tmp_path / "Makefile")
    kept = ["simcore/bags.py", "tests/test_x.py", "out/mine/index.txt"]
    left = [".venv/bin/simweb", ".prefect/prefect.db", ".pytest_cache/v/cache/nodeids", ".hypothesis/examples/x",
            "build/temp.linux-x86_64-cpython-311/simcore/_walk.o", "simweb.egg-info/PKG-INFO",
            "simcore/__pycache__/bags.cpython-311.pyc", "tests/__pycache__/test_x.cpython-311.pyc",
            "out/demo/report/report.html"]
    # One compiled extension per C source, named as setuptools names them in place.
    left += [f"simcore/{c.stem}.cpython-311-x86_64-linux-gnu.so" for c in sorted((REPO / "simcore").glob("_*.c"))]
    assert len(left) >= 14
    for name in kept + left:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    run = subprocess.run(["make", "clean"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert [name for name in left if (tmp_path / name).exists()] == []
    assert [name for name in kept if not (tmp_path / name).exists()] == []
    assert not (tmp_path / "simcore/__pycache__").exists() and not (tmp_path / "out/demo").exists()
