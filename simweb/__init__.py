"""simweb — related-pages search over web crawls (CLI, Python API and HTTP API).

    import simweb
    index = simweb.open_index("index")
    for r in index.related("https://example.org/page", top=5):
        print(r.rank, r.score, r.url)

The layers install inside this package: ``simweb.core`` (the algorithms), ``simweb.tasks``
(Prefect tasks and all I/O), ``simweb.flows`` and ``simweb.deployments``.
"""

__version__ = "0.1.0"
__all__ = ["Index", "Related", "UnknownURL", "open_index", "__version__"]


def __getattr__(name: str):
    # The Python API loads numpy and pyarrow; keep `import simweb` (and the CLI's start-up) light.
    if name in ("Index", "Related", "UnknownURL", "open_index"):
        from simweb import api

        return getattr(api, name)
    raise AttributeError(f"module 'simweb' has no attribute {name!r}")
