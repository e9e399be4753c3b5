"""Post-gen scoring of one model while the next one trains: a pool of worker processes.

Scoring a model's captions (its strata by per-image CIDEr, then METEOR, WMD, CIDEr, BLEU,
ROUGE-L on every stratum) needs no accelerator and little of JAX, and takes seconds per model,
mostly outside JAX (METEOR's Java alignment, gensim's WMD, Python n-gram counting). A search
hands each model to a worker, which runs the flow's worker part on it (``flow.STAGES`` marked
WORKER), and goes on to train and decode the next model; the worker writes its results into
the stage cache as the search itself would have.

Workers are processes: CIDEr, BLEU, ROUGE-L and most of WMD are Python, and in threads
would hold the interpreter lock the training loop needs (``benchmarks/bench_scale.py``
measures both). Where Linux groups tasks by session (autogroup), each worker sits in a
session of its own, so that the scheduler shares the cores between it and the search rather
than among the search's threads (``own_session``). Each worker starts its own METEOR JVM
once: on its first job, or, when the search knows a model will train (``warm``), while that
model trains, so that the JVM's start (about 10 s: Java and METEOR's paraphrase table)
overlaps training instead of delaying the first model's scores. A post-gen metric registered
at run time (``postgen.register_metric`` from the user's code) is unknown to a
fresh worker process, so with such a metric the workers are threads. With ``workers=0`` every
job runs at once in this process, in the order a search without a pool would run it.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import multiprocessing
import multiprocessing.util
import os
import threading
import time
from pathlib import Path

from ..processes import cores_here
from . import flow
from .cache import StageCache
from .config import PostgenConfig
from .flow import ModelScores
from .sources import Data

MAX_WORKERS = 8  # each holds a JVM (up to 2 GB) and GloVe: more rarely pays


def default_workers(processes_here: int = 1) -> int:
    """Workers for one of ``processes_here`` search processes on this machine: one per core of its
    share beyond the one it trains on (at most 8); none with a single core, where a pool would
    only add overhead."""
    return max(0, min(cores_here(processes_here) - 1, MAX_WORKERS))


@dataclasses.dataclass
class Scored:
    """What the post-gen job of one model returns: the flow's worker part, run."""

    model: ModelScores                 # with the worker stages (strata, post-gen) visited
    seconds: dict[str, float]          # timer label -> seconds the job took in its worker
    counts: dict[str, dict[str, int]]  # stage cache: {"strata"/"postgen": {"computed": n, "reused": m}}


# ------------------------------------------------------------------ the job (in a worker or inline)

_STATE = threading.local()  # per worker process, or per worker thread: (cache root, data, metrics)
_THREAD_METRICS: list = []  # metrics started by thread workers, closed with their pool


def _start(cache_root: str, data: Data, config: PostgenConfig, kind: str, parent: int | None = None) -> None:
    """Set up a worker: its view of the stage cache, the test split, and lazily started metrics.

    ``parent``: the search's pid, passed by it (a worker whose search died before this ran would
    otherwise take its new parent, pid 1, for the search and never end)."""
    from .postgen_metrics import LazyMetrics
    if kind == "process":
        from .. import processes
        processes.watch_parent(parent)  # end with the search, even after kill -9 of it (its JVMs die with this process)
        processes.quiet_interrupts_in_worker()  # Ctrl-C: the search alone says so, in one line
        os.environ.setdefault("JAX_PLATFORMS", "cpu")  # workers never need (or may take) an accelerator
        own_session()
    metrics = LazyMetrics(config, data)
    _STATE.args = (cache_root, data, metrics)
    if kind == "process":  # close the METEOR JVM when the worker exits (pool workers skip atexit)
        multiprocessing.util.Finalize(metrics, metrics.close, exitpriority=10)
    else:
        _THREAD_METRICS.append(metrics)


def own_session() -> None:
    """Put this worker process (and the JVMs it starts) in a session of its own, where Linux's
    scheduler groups tasks by session (``/proc/sys/kernel/sched_autogroup_enabled``).

    The scheduler then shares the cores between sessions first: apart, the worker and its JVM
    get their fair share against the search process, not one thread's share among the search's
    many (XLA's pool, one thread per core, for each trainer and for decoding). On the demo (2
    cores): post-gen 34-36 s of worker time in three runs, against 49-57 s in two runs in the
    search's session (the same table; the totals within the machine's drift). The terminal's signals no longer reach the worker:
    the search ends it on Ctrl-C (``PostgenPool.close``), ``watch_parent`` after ``kill -9``;
    Ctrl-Z stops the search while the worker finishes its job. Without autogroup (other systems,
    or turned off) the worker stays in the search's session, as there it would gain nothing.
    """
    try:
        grouped = Path("/proc/sys/kernel/sched_autogroup_enabled").read_text().strip() == "1"
    except OSError:
        grouped = False
    if grouped:
        with contextlib.suppress(OSError):  # already a session leader
            os.setsid()


def _warm() -> None:
    """Start every configured metric in this worker (a JVM boots in its own process meanwhile)."""
    metrics = _STATE.args[2]
    for name in metrics.names:
        metrics[name]


def _score(model: ModelScores, setup=None) -> Scored:
    """The flow's next part (strata and post-gen metrics of one model's captions), through the stage cache.

    ``setup``: arguments of ``_start`` for a worker thread's first job (processes get theirs
    from the pool's initializer).
    """
    if not hasattr(_STATE, "args"):
        _start(*setup)
    cache_root, data, metrics = _STATE.args
    cache, seconds = StageCache(cache_root), {}

    @contextlib.contextmanager
    def timer(label: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds[label] = seconds.get(label, 0.0) + time.perf_counter() - start
    flow.advance(model, flow.Context(data, flow.FlowSettings(None, metrics), cache, timer))
    return Scored(model, seconds, cache.counts())


# ------------------------------------------------------------------ the pool


def test_split_only(data: Data) -> Data:
    """``data`` with only what scoring reads (the test split's image ids, references and features, which
    image-reading metrics such as REO score against and whose hash keys their cache): cheap to send to a
    worker."""
    from ..datasets import CaptionDataset, CaptionSplit
    test = data.test
    dataset = CaptionDataset(data.dataset.name,
                             {"test": CaptionSplit(list(test.image_ids), test.captions, features=test.features,
                                                      raw=test.raw)},
                             data.dataset.tokenizer)
    return Data(dataset, data.vocab, data.facts)


def worker_kind(config: PostgenConfig) -> str:
    """"process", unless a configured metric was registered at run time (a fresh process lacks it)."""
    from .. import postgen
    builtin = all(postgen.REGISTRY[name].metric_class.__module__.startswith("pregen_jax.") for name in config.metrics
                  if name in postgen.REGISTRY)
    return "process" if builtin else "thread"


class PostgenPool:
    """Post-gen jobs in ``workers`` processes or threads (``0``: each job at once, in this thread).

    ``submit`` returns a future of ``Scored``. The workers start on the first job, so a search
    served from the cache starts none. Use as a context manager: workers stop on exit.
    """

    def __init__(self, workers: int, data: Data, config: PostgenConfig, cache_root: Path, kind: str | None = None):
        self.workers = workers
        self.kind = "inline" if workers == 0 else (kind or worker_kind(config))
        self._setup = (str(cache_root), test_split_only(data), config, self.kind)
        self._executor: concurrent.futures.Executor | None = None

    def _start_executor(self) -> concurrent.futures.Executor:
        if self.kind == "process":
            context = multiprocessing.get_context("spawn")  # fork is unsafe once JAX has started threads
            return concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=context, initializer=_start,
                                                          initargs=(*self._setup, os.getpid()))
        return concurrent.futures.ThreadPoolExecutor(self.workers, thread_name_prefix="postgen")

    def warm(self) -> None:
        """Start the worker processes and their metrics now, ahead of the first job (call it when a
        job is sure to come: a model is about to train). Threads and inline jobs start theirs on
        their first job."""
        if self.kind != "process" or self._executor is not None:
            return
        self._executor = self._start_executor()
        from .. import processes
        with processes.interrupts_deferred():
            for _ in range(self.workers):  # one call per worker: each submit to a busy pool starts one more
                self._executor.submit(_warm)

    def submit(self, model: ModelScores) -> concurrent.futures.Future:
        """Run the flow's next part (the worker stages) on ``model``: a future of ``Scored``."""
        slim = flow.for_worker(model)
        setup = None if self.kind == "process" else self._setup
        if self.kind == "inline":
            future = concurrent.futures.Future()
            try:
                future.set_result(_score(slim, setup))
            except BaseException as err:  # noqa: BLE001  (result() re-raises it, as for a worker's)
                future.set_exception(err)
            return future
        if self._executor is None:
            self._executor = self._start_executor()
        from .. import processes
        with processes.interrupts_deferred():  # workers start here; Ctrl-C while they import is deferred, then quiet
            return self._executor.submit(_score, slim, setup)

    def worker_pids(self) -> list[int]:
        """The live worker processes' ids (none before they start, or for thread and inline workers)."""
        return [process.pid for process in self._live_workers()]

    def _live_workers(self) -> list:
        if self.kind != "process" or self._executor is None:
            return []
        processes = getattr(self._executor, "_processes", None) or {}  # the executor's own record of them
        return [process for process in list(processes.values()) if process.exitcode is None]  # not reaped

    def close(self, cancel: bool = False) -> None:
        """Stop the workers: after their jobs, or, with ``cancel`` (Ctrl-C, an error), ending
        process workers at once (thread workers finish their job). The terminal's Ctrl-C may not
        reach them (``own_session``), so they get SIGTERM: its default action ends a worker
        silently even while it still imports, and its JVM dies with it."""
        if cancel:
            for process in self._live_workers():
                with contextlib.suppress(OSError):
                    process.terminate()
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=cancel)
            self._executor = None
        if self.kind != "process":
            while _THREAD_METRICS:
                _THREAD_METRICS.pop().close()
            if hasattr(_STATE, "args"):
                del _STATE.args

    def __enter__(self) -> PostgenPool:
        return self

    def __exit__(self, exc_type, *exc) -> None:
        self.close(cancel=exc_type is not None)
