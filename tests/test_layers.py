"""The layers and which way their imports point (DESIGN.md "Layers"; STYLE.md habit 1).

    simweb (the face: CLI, Python API, HTTP)  →  deployments  →  flows  →  tasks  →  core
                                                        corpora  →  core

Each layer imports only the layers below it; the corpus builders stand apart from the
pipeline; and the algorithms (simweb.core) import no I/O or orchestration library at all.
"""
import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FORBIDDEN = ("prefect", "dask", "distributed", "pyarrow", "warcio", "fsspec")
# Layer → (its folder in the repository, the simweb layers it may import besides itself).
LAYERS = {
    "core": ("simcore", set()),
    "tasks": ("tasks", {"core"}),
    "corpora": ("corpora", {"core"}),
    "flows": ("flows", {"core", "tasks", "corpora"}),
    "deployments": ("deployments", {"core", "tasks", "flows"}),
    "face": ("simweb", {"core", "tasks", "corpora", "flows", "deployments"}),
}
PACKAGES = {"simweb.core": "core", "simweb.tasks": "tasks", "simweb.corpora": "corpora",
            "simweb.flows": "flows", "simweb.deployments": "deployments"}


def _layer_of(module: str) -> str | None:
    for prefix, layer in PACKAGES.items():
        if module == prefix or module.startswith(prefix + "."):
            return layer
    return "face" if module == "simweb" or module.startswith("simweb.") else None


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports (``import x``, ``from x import y``, ``from x import module``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_every_import_points_down():
    wrong = []
    for layer, (folder, allowed) in LAYERS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            for line, module in _imports(path):
                target = _layer_of(module)
                if target is not None and target != layer and target not in allowed:
                    wrong.append(f"{path.relative_to(REPO)}:{line} ({layer}) imports {module} ({target})")
    assert not wrong, "imports against the layers:\n" + "\n".join(sorted(set(wrong)))


def test_the_layer_rule_catches_an_upward_import(tmp_path):
    upward = tmp_path / "upward.py"
    upward.write_text("from simweb.flows.build_index import build_index\nimport simweb.tasks.ingest\n")
    assert [_layer_of(m) for _, m in _imports(upward)] == ["flows", "flows", "tasks"]


def test_importing_simcore_pulls_in_no_io_or_orchestration_library():
    code = (
        "import importlib, pkgutil, sys, simweb.core\n"
        "for m in pkgutil.walk_packages(simweb.core.__path__, 'simweb.core.'):\n"
        "    importlib.import_module(m.name)\n"
        f"bad = sorted(n for n in sys.modules if n.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"simweb.core imported: {out.stdout.strip()}"


def _imported_by(package: str) -> set[str]:
    """Every module loaded by importing all modules of ``package`` in a fresh interpreter."""
    code = (
        f"import importlib, pkgutil, sys, {package} as p\n"
        f"for m in pkgutil.walk_packages(p.__path__, '{package}.'):\n"
        "    importlib.import_module(m.name)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_corpus_builders_stay_apart_from_the_core_and_from_orchestration():
    # The algorithms never reach into the corpus builders ...
    core = _imported_by("simweb.core")
    assert not {m for m in core if m.startswith("simweb.corpora")}, "simweb.core imported simweb.corpora"
    # ... and the builders are a library: no Prefect or Dask, nor the layers that use them.
    corpora = _imported_by("simweb.corpora")
    bad = sorted(m for m in corpora if m.split(".")[0] in ("prefect", "dask", "distributed")
                 or m.startswith(("simweb.tasks", "simweb.flows", "simweb.deployments")))
    assert not bad, f"simweb.corpora imported {bad}"
