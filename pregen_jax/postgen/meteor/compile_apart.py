# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""METEOR's compiled code built into numba's cache by processes of their own, on a first run.

Why: a first run compiles the search (``fast._batch``: about two thirds of numba's compile) and
the table's walk (``packed._pack``, with ``scoring``'s rows), and builds a paraphrase table, each
taking seconds, one after the other in METEOR's process. Here two processes compile them (the
search's candidate matching in the walk's process: the parts about even) while METEOR's process
builds the table; it then loads both from the cache
(``PythonMeteor._compiled_ready``). On two cores the three share them (and, on a busy machine,
hold three of its queue's places, as the JVMs of COCOEvalCap hold several); only where the cache
folder can be written (else nothing could be handed over: METEOR's process compiles them itself).

Protocol: the parent writes the part to compile (``search`` or ``walk``) and a newline on the
child's standard input; the child compiles it, then ends (exit status 0); it dies with its parent
(``processes.watch_parent``).
"""
from __future__ import annotations

import os
import subprocess
import sys

PARTS = ("search", "walk")


def started(part: str) -> subprocess.Popen:
    """A child compiling ``part`` (``PARTS``), started now."""
    from ... import processes
    child = processes.python_child(__name__, "compile_in_child")
    child.stdin.write(part.encode() + b"\n")
    child.stdin.close()
    return child


def compile_part(part: str) -> None:
    """Compile (or load from numba's cache) ``part``. ``search``: the beam search, then the batch
    (``fast.pair_stats_batch``), which takes the candidates' matching from the cache where ``walk`` has
    put it by then; ``walk``: the candidates' matching first (so that it is there), then the
    table's walk and the rows' scores (an empty table and no synonyms: only the types matter).
    Each is called with the types the batch calls it with, so the cache holds what it loads."""
    import numpy as np

    from . import fast
    words, offsets = np.array([1, 2], np.int64), np.array([0, 1, 2], np.int64)
    sentence = (words, words, offsets, words, words, np.array([True, False]), offsets, np.array([1, 1], np.int64),
                offsets, words)  # fast.pack's arrays: a sentence that meets every matcher
    if part == "search":
        fast._search(np.array([[0, 1, 0, 1, 0]], np.int64), 1, 1, fast.WEIGHTS)
        fast.pair_stats_batch(np.zeros(1, np.int64), np.zeros(1, np.int64), [sentence])
        return
    from . import paraphrase, scoring
    from .matchers import Analyzer
    from .packed import Packer
    from .resources import Synonyms
    fast._candidates(sentence, sentence)
    Packer(Analyzer(Synonyms({}, {}), paraphrase.empty_table())).pack([("a", "man")])
    scoring.eval_rows(np.zeros((1, scoring.K)))


def compile_in_child() -> None:
    """The child (``python_child``'s entry): compile the part asked for into numba's cache, then end."""
    from ... import processes
    from .jit import numba_started_without_scipy
    processes.quiet_interrupts_in_worker()
    processes.watch_parent()
    part = sys.stdin.buffer.readline().decode().strip()
    os.dup2(2, 1)  # nothing on the pipe the parent does not read
    numba_started_without_scipy()
    compile_part(part)
    os._exit(0)
