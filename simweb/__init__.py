"""simweb — related-pages search over web crawls (CLI, Python API and HTTP API)."""

__version__ = "0.1.0"
