"""The one cache of post-gen metrics: the last few values worked out, by content. The array backends
keep what a call built for the calls that follow on the same strings, under keys that say what
the value is: ``("references", strings)`` (references split and counted, reused by other
candidates), ``("corpus", inputs)`` (references and candidates encoded and joined, reused by the
next metric), ``("tokenized", inputs)`` (the functional API's inputs as the package tokenizer
writes them)."""
from __future__ import annotations

import ctypes
import threading


class Recent:
    """Up to ``size`` values by key, the oldest dropped first; thread-safe (two threads missing the
    same key at once both compute it, and the later value is kept)."""

    def __init__(self, size: int):
        self.size = size
        self._values: dict = {}
        self._lock = threading.Lock()

    def get(self, key, compute):
        """The value kept under ``key``, else ``compute()``, kept."""
        with self._lock:
            if key in self._values:
                return self._values[key]
        value = compute()
        with self._lock:
            self._values[key] = value
            while len(self._values) > self.size:
                del self._values[next(iter(self._values))]
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()


CACHE = Recent(8)  # about two sets of references, two corpora, two tokenized inputs and room to turn over


def release_kept() -> None:
    """Empty ``CACHE`` and hand the memory it held back to the operating system: glibc keeps freed
    arrays below its (adaptive) mmap threshold in the heap, so without ``malloc_trim`` a process
    that dropped a 1 GB corpus still held 1 GB (a no-op where the C library is not glibc)."""
    CACHE.clear()
    _trim()


def _trim() -> None:
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl without it, Windows)
        return
    trim(0)
