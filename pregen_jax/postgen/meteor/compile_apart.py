# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""METEOR's alignment search compiled into numba's cache by a process of its own, on a first run.

Why: a first run compiles the search (``fast._batch``: about three quarters of numba's compile)
and builds a paraphrase table, one after the other in METEOR's process. Here the search compiles
on the other core while METEOR's process compiles the table's walk and builds the table; that
process then loads the search from the cache (``PythonMeteor._search_ready``). Only where the cache
folder can be written (else nothing could be handed over: METEOR's process compiles it itself).

Protocol: none. The child compiles, then ends (exit status 0); it dies with its parent
(``processes.watch_parent``).
"""
from __future__ import annotations

import os
import subprocess


def started() -> subprocess.Popen:
    """The compiling child, started now."""
    from ... import processes
    return processes.python_child(__name__)


def serve() -> None:
    """The child: compile the search into numba's cache (``fast.warm_up``), then end."""
    from ... import processes
    from .process import _numba_started_without_scipy
    processes.quiet_interrupts_in_worker()
    processes.watch_parent()
    os.dup2(2, 1)  # nothing on the pipe the parent does not read
    _numba_started_without_scipy()
    from . import fast
    fast.warm_up()
    os._exit(0)
