"""No process of a run outlives it: child processes end with their parent, however it ends.

A search starts post-gen worker processes, Java processes (METEOR, SPICE) and, with
``--num-processes``, whole search processes. ``kill -9`` of the search runs no cleanup code,
so each child arranges its own end instead:

- a child started with ``preexec_fn=die_with_parent`` gets SIGKILL from the kernel when the
  thread that started it ends (Linux ``prctl(PR_SET_PDEATHSIG)``; elsewhere nothing);
- a Python worker calls ``watch_parent()``: a daemon thread that ends the worker once its
  parent is gone (its parent id changes), whichever thread of the parent started it.

multiprocessing's resource tracker ends by itself once every process holding its pipe (the
search and its workers) has ended.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import gc
import importlib
import importlib.util
import os
import signal
import subprocess
import sys
import threading
import time
import warnings

PR_SET_PDEATHSIG = 1
POLL_SECONDS = 0.5


def cores_here(processes_here: int = 1) -> int:
    """The CPU cores this process may use, shared with ``processes_here - 1`` others on its machine (at least 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, processes_here))


@functools.lru_cache(maxsize=1)
def _libc():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


_libc()  # loaded here, in the parent: a child between fork and exec must not load libraries (locks)


def ignore_fork_warning() -> None:
    """Silence JAX's warning that ``os.fork()`` deadlocks a threaded process, for the children this
    package starts: ``preexec_fn`` makes Python fork (not spawn) them, which runs JAX's at-fork hook,
    but between fork and exec they only ask the kernel for a death signal (no lock, no Python
    object): the one safe use of fork in a threaded process. Only that message is silenced."""
    warnings.filterwarnings("ignore", message=r"os\.fork\(\) was called", category=RuntimeWarning)


ignore_fork_warning()


def die_with_parent() -> None:
    """In a child, between fork and exec (``preexec_fn``): SIGKILL when the parent thread ends."""
    libc = _libc()
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def popen(args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` of a child that dies with this process (see ``die_with_parent``)."""
    return subprocess.Popen(args, preexec_fn=die_with_parent, **kwargs)


_EARLY: dict[str, subprocess.Popen] = {}  # module -> its child, started by start_early, not yet adopted


def python_child(module: str, entry: str = "serve") -> subprocess.Popen:
    """A Python process running ``module.<entry>()`` (``served``; ``serve`` unless named), with pipes
    for standard input and output, dying with this process, Ctrl-C reported by this one (the child
    calls ``quiet_interrupts_in_worker``)."""
    with interrupts_deferred():
        return popen([sys.executable, "-c", f"import {__name__}; {__name__}.served({module!r}, {entry!r})"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     env={**os.environ, **ONE_BLAS_THREAD, PARENT_REPORTS_INTERRUPTS: "1"})


ONE_BLAS_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
"""A served worker's environment: its work is its own compiled code and threads, no linear algebra, so
numpy's BLAS starts one thread, not one per core that spin at start (a 16-core machine's evaluate
spent 8.7 CPU seconds for 1.5 s of wall at 5,000 images)."""


def served(module: str, entry: str = "serve") -> None:
    """A child's entry (``python_child``): ``module.<entry>()``, with the packages between the top one
    and ``module`` made but not run: their ``__init__`` import what their users need (``postgen``'s:
    every metric, the settings' pydantic models: 0.1 s), not what the worker reads, and whatever the
    worker imports from them it imports by its module (``from ..base import x`` runs base.py)."""
    parts = module.split(".")
    for k in range(2, len(parts)):
        name = ".".join(parts[:k])
        if name not in sys.modules:
            sys.modules[name] = importlib.util.module_from_spec(importlib.util.find_spec(name))
    getattr(importlib.import_module(module), entry)()


@contextlib.contextmanager
def started_early(module: str):
    """Inside: ``python_child(module)`` started now, before the imports and reading that precede its
    use, for ``adopt(module)`` to take; at the end (or this process's exit) killed if nobody did."""
    if module not in _EARLY:
        _EARLY[module] = python_child(module)
    try:
        yield
    finally:
        _end_unadopted(module)


def adopt(module: str) -> subprocess.Popen:
    """The child ``started_early(module)`` started, or a new ``python_child(module)``."""
    child = _EARLY.pop(module, None)
    return child if child is not None else python_child(module)


@atexit.register
def _end_unadopted(module: str | None = None) -> None:
    for name in [module] if module is not None else list(_EARLY):
        child = _EARLY.pop(name, None)
        if child is not None:
            child.kill()
            child.wait()
            for stream in (child.stdin, child.stdout):  # closed here: else unclosed files (ResourceWarning)
                try:
                    stream.close()
                except OSError:  # a pipe the dead child left unread
                    pass


def watch_parent(parent: int | None = None) -> threading.Thread:
    """In a worker process: a daemon thread that ends this process (``os._exit``) once ``parent``
    (default: the current parent) is gone. Children started with ``die_with_parent`` go with it."""
    parent = os.getppid() if parent is None else parent

    def watch():
        while os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        os._exit(1)

    thread = threading.Thread(target=watch, name="watch-parent", daemon=True)
    thread.start()
    return thread


@contextlib.contextmanager
def interrupts_deferred():
    """Start child processes inside: SIGINT is blocked (deferred, never dropped) in this thread.

    Ctrl-C reaches every process of the terminal's group, and the parent alone should report it,
    in one line. Ignoring SIGINT while children start would drop a Ctrl-C that arrives then;
    blocking it defers it: it is delivered here when the block ends (or at once to another of
    this process's threads, which raises it in the main thread all the same). Children inherit the
    blocked signal and unblock it once their own quiet handler is set (``quiet_interrupts_in_worker``,
    ``accept_interrupts``). A no-op outside the main thread or without ``pthread_sigmask``.
    """
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def accept_interrupts() -> None:
    """Unblock SIGINT in this (main) thread: a Ctrl-C deferred since the process started (it
    inherited the block from ``interrupts_deferred``) is handled now, by the handler set before."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def interrupts_never_swallowed():
    """While inside, a Ctrl-C that Python would swallow is raised again.

    A KeyboardInterrupt raised where Python cannot propagate it (a garbage-collector callback such
    as JAX's ``_xla_gc_callback``, a ``__del__``) is only printed as "Exception ignored" and the
    run goes on: a lost Ctrl-C. Here such an interrupt is handed back to the main thread: 50 ms
    later, once the hook has returned, a timer thread calls ``_thread.interrupt_main`` (as if SIGINT
    arrived again; called at once it would be raised, and swallowed, inside the hook), and the main
    thread raises it at its next step.
    """
    import _thread
    previous = sys.unraisablehook

    def hook(unraisable):
        if unraisable.exc_type is not None and issubclass(unraisable.exc_type, KeyboardInterrupt):
            timer = threading.Timer(0.05, _thread.interrupt_main)  # once the hook has returned
            timer.daemon = True
            timer.start()
        else:
            previous(unraisable)
    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous


PARENT_REPORTS_INTERRUPTS = "PREGEN_PARENT_REPORTS_INTERRUPTS"
"""Set in the environment of a process another process started and reports Ctrl-C for."""


def quiet_interrupts_in_worker() -> None:
    """In a worker process: Ctrl-C ends it at once and silently (the parent reports it), including
    one deferred while it started."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda *_: os._exit(130))
        accept_interrupts()


@contextlib.contextmanager
def collector_paused():
    """Inside: Python's cycle collector off (as it was after). For code that makes millions of small
    acyclic objects (token tuples, lists, dicts), which the collector would scan again and again
    for no garbage: about a quarter of METEOR's statistics on 5,000 Flickr8k segments, a tenth of
    evaluate's own CPU (0.13 s at 5,000 images, 0.66 s at 40,504), its peak memory the same."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
