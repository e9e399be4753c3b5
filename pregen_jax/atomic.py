"""Atomic file writes: write a temporary file beside the target, fsync, then rename.

Readers (and a rerun after a crash) see either the old file or the whole new one, never a
truncated one; this is what makes the run folder safe to use as a cache.
"""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    The temporary name keeps ``path``'s suffix, so writers that add one (``np.save``,
    ``np.savez``) write exactly the yielded path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_bytes(data: bytes, path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(text: str, path) -> None:
    write_bytes(text.encode("utf-8"), path)
