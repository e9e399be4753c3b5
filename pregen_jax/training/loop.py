"""The fit loop every trained model of the package shares: epochs, early stopping, the best
epoch kept, snapshots, an atomic checkpoint each epoch, resume, and progress.

A trainer (``captioning.train``, ``reo.train``) supplies only what is its own, as a ``Task``:
each epoch's minibatches, one optimisation step, and the validation that picks the best epoch.

Files in ``workdir``: ``checkpoint.msgpack`` after every epoch (current and best parameters,
optimiser state, progress), ``snapshot-epochN.msgpack`` for the epochs asked for,
``snapshot-stepN.msgpack`` every ``Schedule.snapshot_every`` optimisation steps, and at the
end the final file (the best parameters and the history). A checkpoint resumes only when its
metadata equals the run's on the checked keys (else a one-line ``ValueError``).
"""
from __future__ import annotations

import dataclasses
import operator
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from flax import serialization
from tqdm.auto import tqdm

from ..progress import bar_disabled
from . import checkpoints

CHECKPOINT = "checkpoint.msgpack"


@dataclasses.dataclass(frozen=True)
class Task:
    """The model-specific parts of a training run.

    batches(epoch): that epoch's minibatches (epochs count from 1; the list sets the bar's length).
    step(params, opt_state, batch, epoch, index): one optimisation step -> (params, opt_state, loss).
    validate(params): (values for the history and snapshots, the value the best epoch is chosen
      by); None: no validation, the last epoch is the best.
    improves(value, best): whether ``value`` beats the best so far (strictly: ties keep the earlier epoch).
    line(epoch, record, best): the line printed after an epoch (``record``: its history entry).
    """

    batches: Callable[[int], Sequence]
    step: Callable[[Any, Any, Any, int, int], tuple[Any, Any, Any]]
    line: Callable[[int, dict, bool], str]
    validate: Callable[[Any], tuple[dict[str, float], float]] | None = None
    improves: Callable[[float, float], bool] = operator.gt


@dataclasses.dataclass(frozen=True)
class Schedule:
    """How long to train, what to keep, and what the progress bar shows."""

    epochs: int                              # at most this many epochs
    final: str                               # the final file's name in workdir
    patience: int | None = None              # stop after this many epochs without a better value; None: never early
    snapshot_epochs: tuple[int, ...] = ()    # also keep these epochs' parameters
    snapshot_every: int | None = None        # also keep the parameters after every this many steps (all epochs counted)
    loss_every: int = 1                      # read the loss every this many steps (each read waits for the device)
    batch_size: int | None = None            # items per batch, for the bar's rate
    rate_name: str = "items_per_s"
    description: str = ""                    # names the run in the bar and the lines
    stop: threading.Event | None = None      # set by another thread: end at the next step (the last checkpoint stays)


class Stopped(Exception):
    """Training ended early because ``Schedule.stop`` was set (its last checkpoint resumes it)."""


@dataclasses.dataclass
class Fitted:
    """The best epoch's parameters, the history (one entry per epoch), and the final file."""

    params: Any
    history: list[dict]
    path: Path


def fresh_state() -> dict:
    """Training progress, saved in the checkpoint's metadata: best_val is the best validation
    value so far, best_epoch 0 until an epoch ran, bad_epochs the epochs since it last improved, step
    the optimisation steps of the finished epochs."""
    return {"epoch": 0, "best_val": None, "best_epoch": 0, "bad_epochs": 0, "history": [], "step": 0}


def fit(task: Task, schedule: Schedule, params, optimizer, workdir, meta: dict, checked: Sequence[str],
        progress: bool = True) -> Fitted:
    """Train ``params`` (freshly initialised) with ``optimizer`` until ``schedule.epochs`` or early
    stopping, resuming a matching checkpoint in ``workdir``; write the final file and return it.

    ``meta`` (JSON-serialisable) goes into every file written; a checkpoint must equal it on ``checked``.
    """
    workdir = Path(workdir)
    opt_state = optimizer.init(params)
    best_params, state = params, fresh_state()
    ckpt = workdir / CHECKPOINT
    resumed = checkpoints.resume(ckpt, params, opt_state, meta, checked)
    if resumed:
        params, best_params, opt_state, saved = resumed
        if "best_rsum" in saved:  # a matcher checkpoint written before this loop named its best value so
            saved["best_val"] = saved.pop("best_rsum")
        state = {**fresh_state(), **saved}
    while state["epoch"] < schedule.epochs and (schedule.patience is None or state["bad_epochs"] < schedule.patience):
        epoch = state["epoch"] + 1
        start = time.perf_counter()
        def snapshot(step, params, epoch=epoch):  # a run killed mid-epoch rewrites the same files on resume
            checkpoints.save(workdir / f"snapshot-step{step}.msgpack", {"params": params},
                             {**meta, "epoch": epoch, "step": step})
        params, opt_state, losses, steps = _train_epoch(task, schedule, params, opt_state, epoch, progress,
                                                        state["step"], snapshot)
        state["step"] += steps
        record = {"epoch": epoch, "train_loss": float(np.mean(losses)) if losses else None}
        improved, values = True, {}
        if task.validate is not None:
            eval_start = time.perf_counter()
            values, value = task.validate(params)
            record.update(values, eval_seconds=time.perf_counter() - eval_start)
            improved = state["best_epoch"] == 0 or task.improves(value, state["best_val"])
            if improved:
                state["best_val"] = value
        if improved:
            best_params, state["best_epoch"], state["bad_epochs"] = params, epoch, 0
        else:
            state["bad_epochs"] += 1
        record["seconds"] = time.perf_counter() - start
        state["epoch"] = epoch
        state["history"].append(record)
        if epoch in schedule.snapshot_epochs:
            checkpoints.save(workdir / f"snapshot-epoch{epoch}.msgpack", {"params": params},
                             {**meta, "epoch": epoch, **values})
        checkpoints.save(ckpt, {"params": params, "best_params": best_params,
                                "opt_state": serialization.to_state_dict(opt_state)}, {**meta, "state": state})
        if progress:
            tqdm.write(task.line(epoch, record, improved))
    final = workdir / schedule.final
    checkpoints.save(final, {"params": best_params}, {**meta, "epoch": state["best_epoch"],
                                                      "history": state["history"]})
    return Fitted(best_params, state["history"], final)


def _train_epoch(task: Task, schedule: Schedule, params, opt_state, epoch: int, progress: bool, first_step: int = 0,
                 snapshot: Callable[[int, Any], None] | None = None):
    """One pass over the epoch's minibatches -> (params, opt_state, the losses read, steps taken).

    ``first_step``: the steps of the epochs before; ``snapshot(step, params)`` is called after every
    ``schedule.snapshot_every``-th step (``step`` counts from the start of training)."""
    batches = task.batches(epoch)
    bar = tqdm(batches, desc=f"{schedule.description} epoch {epoch}/{schedule.epochs}".strip(), unit="batch",
               disable=bar_disabled(progress), leave=False)
    start, losses = time.perf_counter(), []
    for index, batch in enumerate(bar):
        if schedule.stop is not None and schedule.stop.is_set():
            raise Stopped(f"{schedule.description or 'training'}: stopped in epoch {epoch}")
        params, opt_state, loss = task.step(params, opt_state, batch, epoch, index)
        if index % schedule.loss_every == 0:
            losses.append(float(loss))
            postfix = {"loss": f"{losses[-1]:.3f}"}
            if schedule.batch_size:
                rate = (index + 1) * schedule.batch_size / (time.perf_counter() - start)
                postfix[schedule.rate_name] = f"{rate:.0f}"
            bar.set_postfix(**postfix)
        if schedule.snapshot_every and snapshot and (first_step + index + 1) % schedule.snapshot_every == 0:
            snapshot(first_step + index + 1, params)
    return params, opt_state, losses, len(batches)
