"""simcore — the algorithms of simweb, pure Python and numpy.

Nothing here imports prefect, dask, pyarrow or warcio, or reads files or environment
variables: functions take and return plain records and numpy arrays (tests/test_layers.py
guards the rule). The papers in the project's design notes are the law for every formula.
"""
