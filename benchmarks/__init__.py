"""Benchmarks: one module per measurement, each runnable as ``python -m benchmarks.<name>``.

Every benchmark prints its numbers and their ratios against a baseline measured in the same
run, never against a number remembered from elsewhere. ``python -m benchmarks`` runs them all.
"""
