# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""The native METEOR in a process of its own (``METEOR.apart``), as the jar runs in its JVM.

Why a process: in the caller's process, numba's start (about half a second, Python that holds
the GIL) and METEOR's Python part (segmenting the lines, listing the new pairs, their word ids)
take Python's lock from whatever runs beside them; ``evaluate``'s array metrics are many short
numpy calls, each of which waits for it. A process of its own loads while the caller reads and
tokenizes, and computes on its own core while the caller scores the other metrics.

Protocol: the caller writes pickled requests to the child's standard input, ``("load",)`` (the
first: load now, if not yet), ``("stats", references, captions)`` (each image's reference token
strings, its caption in a list) or ``("scores", sums)``; the child answers each in order on its own copy of standard output with a
pickle: ``(rows, aligned)`` (``PythonMeteor.stats``'s f64[images, 23] with EVAL's chunk rule, the
pairs aligned so far), ``scoring.meteor_of_sums(sums)``, None, or an error's one-line text, and the
warnings it gave meanwhile, which the caller gives again. Anything else the child prints (the
first run's progress lines) goes to standard error. The child ends at the end of its input, with its
parent (``processes``), or on ``close``.
"""
from __future__ import annotations

import atexit
import gc
import os
import pickle
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable

import numpy as np

from ... import processes
from .jit import numba_started_without_scipy

CLOSE_SECONDS = 5.0  # how long ``close`` waits for the child to end by itself before killing it


class MeteorProcess:
    """``PythonMeteor``'s statistics from a child process, started now (it loads its resources
    while this process goes on). ``stats_started`` sends, its result receives."""

    def __init__(self):
        self._child = processes.adopt(__name__)  # pregen-search evaluate starts it early (processes.started_early)
        self._pending: Callable[[], np.ndarray] | None = None  # the last request's receiver
        self._writer: threading.Thread | None = None  # the last request's writer
        self.aligned = 0  # distinct (test, reference) pairs the child aligned so far
        # load now (a child that found METEOR's caches loaded already): the inputs are checked by now,
        # so a first run builds the table and compiles while this process tokenizes and scores
        self._sent(("load",))

    def stats(self, gts: dict, res: dict) -> np.ndarray:
        """f64[images, 23]: ``PythonMeteor.stats`` of ``gts`` and ``res`` with EVAL's chunk rule applied
        (``scoring.eval_rows``), computed in the child."""
        return self.stats_started(gts, res)()

    def stats_started(self, gts: dict, res: dict) -> Callable[[], np.ndarray]:
        """``stats``, begun: the request is sent now (written by a thread: the child may still be
        loading); calling the result waits for the child's rows (again: the same rows)."""
        reply = self._sent(("stats", [gts[i] for i in gts], [res[i] for i in gts]))

        def finish() -> np.ndarray:
            rows, self.aligned = reply()
            return rows
        return finish

    def meteor_of_sums(self, sums: np.ndarray) -> np.ndarray:
        """f64[...]: ``scoring.meteor_of_sums`` of ``sums`` (f64[..., 23]), computed in the child (its
        compiled ``row_score``, the one place the formula is written)."""
        return self._sent(("scores", np.ascontiguousarray(sums, np.float64)))()

    def _sent(self, request: tuple) -> Callable:
        """Send ``request`` and return the function that receives its reply, once (later calls give
        the same reply). Neither waits for an earlier request's reply: requests are written in
        order (each writer thread after the one before) and replies read in order (receiving a
        reply first receives the earlier ones), so this process goes on while the child loads."""
        payload = pickle.dumps(request, protocol=pickle.HIGHEST_PROTOCOL)
        earlier_writer, earlier_reply = self._writer, self._pending
        failed: list[BaseException] = []

        def send() -> None:
            if earlier_writer is not None:
                earlier_writer.join()
            try:
                self._child.stdin.write(payload)
                self._child.stdin.flush()
            except OSError as error:  # the child ended: receive() says why
                failed.append(error)
        writer = threading.Thread(target=send, name="meteor-request", daemon=True)
        writer.start()
        self._writer = writer
        received: list = []

        def receive():
            if not received:
                if earlier_reply is not None:
                    earlier_reply()  # its reply comes first (an error in it is raised here too)
                if self._pending is receive:
                    self._pending = None
                writer.join()
                try:
                    answer, warned = pickle.load(self._child.stdout)
                except (EOFError, pickle.UnpicklingError) as error:
                    code = self._exit_status()
                    if code == 130:  # Ctrl-C ended it (quiet_interrupts_in_worker), and this process with it
                        raise KeyboardInterrupt from None
                    raise RuntimeError(f"METEOR's process ended without an answer (exit status {code}): "
                                       "its error is printed above") from (failed[0] if failed else error)
                for message in warned:  # given here, as if METEOR ran in this process
                    warnings.warn(message, UserWarning, stacklevel=2)
                if isinstance(answer, str):
                    received.append(RuntimeError(f"METEOR's process: {answer}"))
                else:
                    received.append(answer)
            if isinstance(received[0], RuntimeError):
                raise received[0]
            return received[0]
        self._pending = receive
        return receive

    def _exit_status(self) -> int | None:
        """The child's exit status once it has ended (None: still running after CLOSE_SECONDS)."""
        try:
            return self._child.wait(CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """End the child: its input closed (it then exits by itself), reaped by a thread of this
        process that kills it if it has not ended within CLOSE_SECONDS; the caller does not wait for
        its exit (tens of milliseconds: its memory unmapped), this process's exit does."""
        child = self._child
        for stream in (child.stdin, child.stdout):
            if stream is not None and not stream.closed:
                try:
                    stream.close()
                except OSError:
                    pass
        reaper = threading.Thread(target=_reaped, args=(child,), name="meteor-reaper", daemon=True)
        reaper.start()
        _REAPERS[:] = [*(r for r in _REAPERS if r.is_alive()), reaper]

    def __del__(self):
        if getattr(self, "_child", None) is not None and self._child.poll() is None:
            self._child.kill()


_REAPERS: list[threading.Thread] = []  # closed children's reapers, joined when this process exits


@atexit.register
def _all_reaped() -> None:
    """At exit, wait for every closed child's end (they are ending already: their input is closed),
    so that none outlives this process and its CPU time counts as this process's children's."""
    for reaper in _REAPERS:
        reaper.join(CLOSE_SECONDS)


def _reaped(child: subprocess.Popen) -> None:
    """Wait for ``child`` to end, killing it after CLOSE_SECONDS."""
    try:
        child.wait(CLOSE_SECONDS)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()


def _answer_requests(requests, replies) -> None:
    """Answer each pickled request on ``requests`` with a pickled ``(answer, warned)`` on ``replies``:
    the answer (module doc) and the messages of the warnings given since the last reply (the
    caller gives them again: ``pregen-search`` prints each once)."""
    problem, meteor = None, None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            numba_started_without_scipy()
            from . import scoring
            from .python import PythonMeteor
            meteor = PythonMeteor(tables_of_words=True, compile_apart=True)  # asked about all its sentences at once
            if _loads_quietly(meteor):
                meteor.load()
                gc.freeze()  # numba's and the tables' millions of objects: never scanned by the collector again
        except Exception as error:  # said in answer to every request
            problem = f"{type(error).__name__}: {error}"
        while True:
            try:
                kind, *data = pickle.load(requests)
            except EOFError:
                return
            answer = problem
            if problem is None:
                try:
                    if not meteor.loaded:  # loaded already, unless it had to wait for this first request
                        meteor.load()
                        gc.freeze()
                    if kind == "stats":
                        references, captions = data
                        rows = meteor.stats(dict(enumerate(references)), dict(enumerate(captions)))
                        answer = (scoring.eval_rows(rows), meteor.aligned)
                    elif kind == "scores":
                        answer = scoring.meteor_of_sums(data[0])
                    else:  # "load": nothing more to do
                        answer = None
                except Exception as error:
                    answer = f"{type(error).__name__}: {error}"
            warned = [str(w.message) for w in caught]
            caught.clear()
            try:
                pickle.dump((answer, warned), replies, protocol=pickle.HIGHEST_PROTOCOL)
                replies.flush()
            except BrokenPipeError:  # the caller closed its end (done with this process): end quietly
                return


def _loads_quietly(meteor) -> bool:
    """Whether loading now only reads: METEOR's tables and compiled code are in the cache folder.
    Otherwise the child waits for its first request (``load``), which comes once the caller has
    checked its inputs: a run refused for bad input prints no "compiling" line and builds nothing."""
    from ...io import CACHE_VERSION, cache_root
    return (cache_root() / f"v{CACHE_VERSION}").is_dir() and meteor.compiled_already()


def serve() -> None:
    """The child: replies on a copy of standard output, which then points to standard error, so
    that nothing printed by a library can mix with them."""
    processes.quiet_interrupts_in_worker()
    processes.watch_parent()
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _answer_requests(sys.stdin.buffer, replies)
    try:
        replies.close()
    except BrokenPipeError:
        pass
    os._exit(0)  # nothing to finalize: numba's cache is written as functions load, before any reply

