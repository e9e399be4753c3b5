"""Training ahead: the next units of a search train in threads while this one is decoded.

On a CPU, one training step of a small captioner (the demo's: a GRU of 128 over a 72-word
vocabulary, batches of 128) runs as fast on one core as on two: XLA's thread pool gains
nothing on matrices this small. Two runs trained at once, in two threads of the search's
process (JAX releases the interpreter lock while a step runs), use both cores: 1.66x the
steps per second of one on 2 cores (``benchmarks/bench_scale.py --only trainers``). Threads, not
processes: they share the data, the compiled steps and the stage cache. Each run trains
exactly as it would alone (its own seed and data order), so the models are the same.

Units are started in the search's order and handed back in that order; a failure, or
Ctrl-C, sets a stop event that ends every other training at its next step (its last
checkpoint stays, so a rerun resumes it). With one trainer, units train in the calling
thread, one at a time: the plain sequential search.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..processes import cores_here

MAX_TRAINERS = 4  # each holds a model, its optimiser state and its batches; more rarely pays on one machine


def default_trainers(processes_here: int = 1) -> int:
    """Trainer threads for one of ``processes_here`` search processes on this machine: one per core of
    its share (at most 4) on a CPU; one where JAX runs on an accelerator (the steps share the device)."""
    import jax
    if jax.default_backend() != "cpu":
        return 1
    return min(cores_here(processes_here), MAX_TRAINERS)


def trainers_fill_cores(trainers: int, processes_here: int = 1) -> bool:
    """Whether ``trainers`` threads training on the CPU keep every core of this process's share busy.
    Work put beside them then only slows them down and takes 2-3x its own time (the demo's post-gen
    on 2 cores: 28 s alone, 57-64 s beside two trainers), so it is better done once they are done."""
    import jax
    return trainers > 1 and jax.default_backend() == "cpu" and trainers >= cores_here(processes_here)


@contextlib.contextmanager
def started_in_order(units: Sequence, start: Callable[[Any], Any], trainers: int,
                     stop: threading.Event) -> Iterator[Iterator[tuple[int, Any]]]:
    """An iterator of (index, start(unit)) for each unit in order, with up to ``trainers`` units
    started at once in threads. ``start`` must end early (raise) once ``stop`` is set; leaving the
    ``with`` block sets it (whether the caller took every unit, stopped early or failed) and
    returns only once every thread has ended."""
    if trainers <= 1:
        yield ((index, start(unit)) for index, unit in enumerate(units))
        return
    pool = concurrent.futures.ThreadPoolExecutor(trainers, thread_name_prefix="pregen-trainer")
    try:
        futures = [pool.submit(start, unit) for unit in units]
        yield ((index, future.result()) for index, future in enumerate(futures))
    finally:
        stop.set()  # what the caller took is done; a training still running is not wanted
        pool.shutdown(wait=True, cancel_futures=True)
