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
