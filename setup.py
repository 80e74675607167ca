"""The one compiled part of simweb: simweb.core._scan, the word and marker scan of the ingest.

Everything else about the package is in pyproject.toml. The extension is optional: where no
C compiler is at hand the install goes on, and simweb.core.html scans in Python (the same
results; the ingest benchmark runs about a fifth slower).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("simweb.core._scan", ["simcore/_scan.c"], optional=True)])
