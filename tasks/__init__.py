"""tasks — Prefect tasks and the I/O around simcore: WARC, Parquet and index files."""
