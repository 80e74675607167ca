"""The algorithm layer must not know where its data lives (STYLE.md habit 1)."""
import subprocess
import sys

FORBIDDEN = ("prefect", "dask", "distributed", "pyarrow", "warcio", "fsspec")


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
