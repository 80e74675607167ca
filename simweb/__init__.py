"""simweb — related-pages search over web crawls (CLI, Python API and HTTP API)."""

__version__ = "0.1.0"


def __getattr__(name: str):
    # The Python API loads numpy and pyarrow; keep `import simweb` (and the CLI's start-up) light.
    if name == "open_index":
        from simweb.api import open_index

        return open_index
    raise AttributeError(f"module 'simweb' has no attribute {name!r}")
