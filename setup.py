"""The compiled parts of simweb, all optional: simweb.core._scan, the word and marker scan of
the ingest; simweb.core._walk, the ingest's marking walk over Lexbor's tree (it calls the Lexbor
functions of the installed selectolax, found with dlopen/dlsym); simweb.core._gather, the bag
fragments' gather of word runs and sums of equal (URL, term) pairs, and the first link
of each page to each other page that in-degrees count; simweb.core._porter, the
Porter stemmer (nltk's ORIGINAL_ALGORITHM, rule for rule); simweb.core._rerank, the count of
the min-hash positions each candidate of a query shares with it and the exact re-rank of the
candidates over the index's bag arrays; and simweb.core._dart,
the DartMinHash signatures.

Everything else about the package is in pyproject.toml. Where no C compiler is at hand the
install goes on and each runs in Python with the same results: simweb.core.html scans in
Python (the ingest benchmark runs about a fifth slower) and marks the tree with selectolax
calls (up to half as fast on pages with many links), simweb.core.bags gathers with numpy and
sums with Arrow, words are stemmed by nltk (together the bag fragments about 1.6 times
slower), simweb.core.dartminhash signs with numpy (about a tenth of the C speed), and
simweb.core.query counts and simweb.core.rerank scores a query's candidates with numpy (the
default query on a 100k-page index about 1.8 times slower). The signatures must be the same bits on every CPU, so
_dart is compiled without contracting a*b+c into fused multiply-adds and without fast-math.
"""
from setuptools import Extension, setup

setup(ext_modules=[
    Extension("simweb.core._scan", ["simcore/_scan.c"], optional=True),
    Extension("simweb.core._walk", ["simcore/_walk.c"], optional=True, libraries=["dl"]),
    Extension("simweb.core._gather", ["simcore/_gather.c"], optional=True),
    Extension("simweb.core._porter", ["simcore/_porter.c"], optional=True),
    Extension("simweb.core._rerank", ["simcore/_rerank.c"], optional=True),
    Extension("simweb.core._dart", ["simcore/_dart.c"], optional=True, libraries=["m"],
              extra_compile_args=["-ffp-contract=off", "-fno-fast-math"]),
])
