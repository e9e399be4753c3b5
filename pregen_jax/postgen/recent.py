"""The last few values worked out, by key: the array backends keep what a call built (references
split and counted, a corpus) for the calls that follow on the same strings."""
from __future__ import annotations

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
