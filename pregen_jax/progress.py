"""Whether a progress bar draws: one rule for every bar of the package.

``--no-progress`` turns every bar off, in the command's process and in the processes it starts
(post-gen workers inherit the environment, ``NO_PROGRESS_ENV``), bars drawn deep inside a metric
included (METEOR's paraphrase-table build, which no option reaches). Otherwise a bar draws where
its stream is a terminal, or in a notebook: a log file gets none of tqdm's carriage-return updates.
"""
from __future__ import annotations

import contextlib
import os

NO_PROGRESS_ENV = "PREGEN_JAX_NO_PROGRESS"  # "1": every bar off (set by ``no_progress``)


def bar_disabled(progress: bool = True) -> bool | None:
    """tqdm's ``disable`` for a bar its caller draws when ``progress``: True (off) without
    ``progress`` or inside ``no_progress``; else None, tqdm's own rule: off where the stream is
    not a terminal (a notebook's bar, which tqdm.auto draws as a widget, still shows)."""
    if not progress or os.environ.get(NO_PROGRESS_ENV) == "1":
        return True
    return None


@contextlib.contextmanager
def no_progress(active: bool = True):
    """Every bar off while inside (when ``active``), in this process and the processes started
    meanwhile; the environment restored after."""
    if not active:
        yield
        return
    before = os.environ.get(NO_PROGRESS_ENV)
    os.environ[NO_PROGRESS_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(NO_PROGRESS_ENV, None)
        else:
            os.environ[NO_PROGRESS_ENV] = before
