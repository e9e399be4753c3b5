"""Results of ``pregen-search unit-tests`` as data: reading ``pregen_unit_tests.tsv`` and the
pass-rate table the search report renders from it.

The pipeline's report reads these results (``FinishedSearch.unit_tests``); the command that
produces them lives above, in ``meta.model_tests``. Free of JAX, so a report renders cheaply.
"""
from __future__ import annotations

import io as stdio
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..ranking.stats import PERPLEXITY_BASELINE

UNIT_TESTS_FILE = "pregen_unit_tests.tsv"
UNIT_TESTS_REPORT = "pregen_unit_tests.md"   # its name inside a search's run folder (report.md is the search's)
TEST_ORDER = ("temperature", "shuffled_images", "param_noise", "early_snapshot")
TOP = 10
SECTION = "## Pre-gen unit tests"


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A GitHub-flavoured Markdown table; floats with one decimal, NaN as a dash."""
    def cell(value) -> str:
        if isinstance(value, float):
            return "-" if value != value else f"{value:.1f}"
        return str(value)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def read_unit_tests(path) -> pd.DataFrame:
    """A pregen_unit_tests.tsv, checked: the columns, known tests, whole numbers, passed <= trials."""
    path = Path(path)
    text = io.read_text(path, "unit-test file")
    try:
        frame = pd.read_csv(stdio.StringIO(text), sep="\t")
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as err:
        raise ValueError(f"{path}: not a TSV file ({' '.join(str(err).split())})") from None
    needed = ["test", "kind", "pregen", "trials", "passed", "accuracy"]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: no column {missing[0]!r} (written by pregen-search unit-tests?)")
    if frame.empty:
        raise ValueError(f"{path}: no rows")
    for column in ("trials", "passed"):
        values = pd.to_numeric(frame[column], errors="coerce")
        if values.isna().any() or (values < 0).any() or (values % 1 != 0).any():
            row = int(np.argmax((values.isna() | (values < 0) | (values % 1 != 0)).to_numpy()))
            raise ValueError(f"{path}, line {row + 2}: column {column!r} is {frame[column].iloc[row]!r}, "
                             "not a count")
        frame[column] = values.astype(int)
    bad = frame["passed"] > frame["trials"]
    if bad.any():
        raise ValueError(f"{path}, line {int(np.argmax(bad.to_numpy())) + 2}: passed exceeds trials")
    frame["accuracy"] = np.where(frame["trials"] > 0, 100.0 * frame["passed"] / frame["trials"].clip(lower=1),
                                 np.nan)
    return frame


def pass_rates(frame: pd.DataFrame) -> pd.DataFrame:
    """pregen x test: accuracy in percent (NaN where a test has no trials or no row)."""
    wide = frame.pivot_table(index="pregen", columns="test", values="accuracy", aggfunc="first", sort=False)
    return wide.reindex(columns=[t for t in TEST_ORDER if t in wide.columns]
                        + [t for t in wide.columns if t not in TEST_ORDER])


def _cell(accuracy: float, trials: float) -> str:
    return "-" if not np.isfinite(accuracy) else f"{accuracy:.0f}% ({int(trials)})"


def top_metrics_table(frame: pd.DataFrame, correlations: pd.DataFrame | None, top: int = TOP) -> str:
    """Pass rates of the top metrics by R^2 (with CIDEr when given) plus the perplexity baseline."""
    rates = pass_rates(frame)
    trials = frame.pivot_table(index="pregen", columns="test", values="trials", aggfunc="first", sort=False)
    if correlations is not None and len(correlations):
        order = list(correlations["pregen"])
        chosen = [(k + 1, p) for k, p in enumerate(order[:top])]
        if PERPLEXITY_BASELINE in order and PERPLEXITY_BASELINE not in order[:top]:
            chosen.append((order.index(PERPLEXITY_BASELINE) + 1, PERPLEXITY_BASELINE))
    else:
        chosen = [("", PERPLEXITY_BASELINE)] if PERPLEXITY_BASELINE in rates.index else []
    tests = list(rates.columns)
    rows = []
    for rank, name in chosen:
        label = f"`{name}`" + (" (perplexity baseline)" if name == PERPLEXITY_BASELINE else "")
        rows.append([rank, label] + [_cell(rates.at[name, t], trials.at[name, t]) if name in rates.index else "-"
                                     for t in tests])
    return markdown_table(["rank", "pre-gen metric", *tests], rows)


def unit_tests_section(frame: pd.DataFrame | str | None, correlations: dict[str, pd.DataFrame]) -> str:
    """The search report's '## Pre-gen unit tests' section: "" without results; ``frame`` a string
    is why the results could not be read."""
    if frame is None:
        return ""
    if isinstance(frame, str):
        return f"{SECTION}\n\n{UNIT_TESTS_FILE} could not be read: {frame}\n"
    post = "CIDEr" if "CIDEr" in correlations else next(iter(correlations), None)
    lines = [SECTION, "",
             f"From `{UNIT_TESTS_FILE}` (`pregen-search unit-tests`; details in `{UNIT_TESTS_REPORT}`; rerun it "
             "after the models change). Pass rate (trials) per test, for the top metrics by R^2 with "
             f"{post} and the perplexity baseline:", "",
             top_metrics_table(frame, correlations.get(post) if post else None), ""]
    return "\n".join(lines)
