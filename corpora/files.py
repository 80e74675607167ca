"""A corpus's output files: written whole or not at all, with the SHA-256 of their bytes.

A file is written under a temporary name in its folder and renamed when complete, so that a
reader (or a build run again) never sees half a file. Paths are local paths or fsspec URLs.
"""
from __future__ import annotations

import hashlib
import uuid

import fsspec

__all__ = ["OutputFile", "join", "write_output"]

TMP_PREFIX = ".tmp-"


def join(base: str, *parts: str) -> str:
    """``base/part/…`` for a local path or URL."""
    return "/".join([base.rstrip("/"), *[p.strip("/") for p in parts]])


class OutputFile:
    """A binary file written as a stream and published whole on a clean exit of its ``with`` block.

    ``sha256`` and ``size`` describe the bytes written. On an error the temporary file is removed
    and the file at ``url`` stays as it was.
    """

    def __init__(self, url: str):
        self.url = url
        self.size = 0
        self._fs, self._path = fsspec.core.url_to_fs(url)
        self._hash = hashlib.sha256()
        self._tmp = ""
        self._out = None

    def __enter__(self) -> "OutputFile":
        parent, name = self._path.rsplit("/", 1) if "/" in self._path else (".", self._path)
        self._fs.makedirs(parent, exist_ok=True)
        self._tmp = f"{parent}/{TMP_PREFIX}{uuid.uuid4().hex}-{name}"
        self._out = self._fs.open(self._tmp, "wb")
        return self

    def write(self, data: bytes) -> int:
        self._out.write(data)
        self._hash.update(data)
        self.size += len(data)
        return len(data)

    def flush(self) -> None:
        self._out.flush()

    def __exit__(self, exc_type, exc, tb) -> None:
        self._out.close()
        if exc_type is None:
            self._fs.mv(self._tmp, self._path)
        elif self._fs.exists(self._tmp):
            self._fs.rm(self._tmp)

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def write_output(url: str, data: bytes) -> str:
    """Write ``data`` to ``url`` whole or not at all; return its SHA-256."""
    with OutputFile(url) as out:
        out.write(data)
    return out.sha256
