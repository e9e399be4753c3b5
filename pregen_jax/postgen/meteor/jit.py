# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""numba compilation for METEOR's hot loops, on first use: importing this package neither imports
numba nor touches the cache folder. ``@compiled`` functions become numba functions together,
the first time one is called (``compile_all``), their machine code cached in
``cache_folder()/numba`` (never beside the installed source), or kept in memory only where the
cache folder cannot be written.

Measured (2 shared cores, load average 18, the METEOR warm-up): compiling the search, the
paraphrase walk and the score takes 19.3 CPU seconds with numba's cache empty and 0.6 with it
warm (benchmarks/HISTORY.md, ``bench_first_run.py``). Issue 51 (load 10-12, runs interleaved with
the code before): 9.5-12.2 CPU s for the search and 5.6-6.2 for the walk and the score, against
32.0-34.5 for all before, by compiling less: no slice assignment or numba sort or searchsorted
(each compiles seconds of library code), small helpers inlined (``compiled(inline=True)``).
"""
from __future__ import annotations

import functools
import hashlib
import sys
import threading
from pathlib import Path

_PENDING: list = []  # the @compiled functions not yet handed to numba
_LOCK = threading.RLock()


def compiled(function=None, *, inline: bool = False):
    """``function``, to be compiled by ``numba.njit`` (cached) the first time any ``@compiled``
    function is called; calls go to the compiled function from then on. ``@compiled(inline=True)``:
    a small helper that compiled callers take in as their own code (numba's ``inline="always"``)
    instead of calling a function compiled apart: each function compiled apart costs numba a
    pipeline of its own (and one per constant argument it is called with), which on a first run
    cost more than the helpers' code (benchmarks/HISTORY.md, ``bench_first_run.py``)."""
    if function is None:
        return functools.partial(compiled, inline=inline)
    _PENDING.append((function, inline))

    @functools.wraps(function)
    def first_call(*args):
        compile_all()
        return function.__globals__[function.__name__](*args)
    first_call.py_func = function
    return first_call


def compile_all() -> None:
    """Replace every ``@compiled`` function in its module by its numba dispatcher (numba reads
    ``config.CACHE_DIR`` when a function is decorated; compiling itself happens on each one's
    first call with new argument types)."""
    with _LOCK:
        if not _PENDING:
            return
        import numba

        from ...io import cache_folder
        cache = cache_folder()
        previous = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = str(cache / "numba") if cache is not None else previous
        try:
            for function, inline in _PENDING:
                # nogil: callers may run them in threads (evaluate's METEOR beside the other metrics)
                options = {"inline": "always"} if inline else {}
                function.__globals__[function.__name__] = numba.njit(cache=cache is not None, nogil=True,
                                                                     **options)(function)
        finally:
            numba.config.CACHE_DIR = previous
        _PENDING.clear()


def compiling_message(sources: list[Path]) -> str | None:
    """The line to print before the first compile of ``sources``' functions in this cache folder
    (``None`` where numba's cache already holds them: ``mark_compiled`` was called)."""
    marker = _marker(sources)
    if marker is not None and marker.exists():
        return None
    where = "numba's cache in the cache folder" if marker is not None else "memory (the cache folder is not writable)"
    return f"METEOR: compiling its alignment search with numba (about 10 CPU seconds; once per cache folder) into {where}"


def mark_compiled(sources: list[Path]) -> None:
    """Record that ``sources``' functions are compiled into numba's cache (see ``compiling_message``)."""
    marker = _marker(sources)
    if marker is not None:
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass


def _marker(sources: list[Path]) -> Path | None:
    from ...io import cache_folder
    cache = cache_folder()
    if cache is None:
        return None
    import numba
    digest = hashlib.sha256(numba.__version__.encode() + sys.version.encode())
    for source in sources:  # numba's cache is per source path and content
        digest.update(str(Path(source).resolve()).encode() + Path(source).read_bytes())
    return cache / "numba" / f".compiled-{digest.hexdigest()[:16]}"


def numba_started_without_scipy() -> None:
    """Import numba's array functions with scipy hidden, in this process only: numba's import of
    them probes scipy's BLAS (``numba.np.arraymath``: 0.2 s importing ``scipy.linalg``) to pick an
    inner product for ``np.cov``-like functions, which METEOR's search never calls; ``np.dot`` and
    the rest of numba's linear algebra still import scipy when compiled. Only this child does it:
    another process's own numba functions are untouched."""
    import numba  # noqa: F401
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    sys.modules["scipy.linalg"] = None  # makes ``import scipy.linalg...`` raise ImportError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        del sys.modules["scipy.linalg"]
