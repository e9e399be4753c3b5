"""Which rows of a data-point table a search's findings rest on, for ``pregen-search rank``.

A search's ``table.tsv`` keeps every model's rows, the degenerate ones too; its report, its
correlations and its decisions rest on the others (``[pregen] degenerate = "exclude"``), and
``models.tsv`` says which (``in_findings``). ``rank`` given that table should give the report's
numbers, so it reads the exclusions where they are: the search's manifest beside the table (a
finished run folder, opened and checked by ``FinishedSearch``), else a ``models.tsv`` with an
``in_findings`` column beside it, else an ``in_findings`` column in the table itself. Any other
table is ranked as given.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd

from .config import model_label
from .finished import MANIFEST, FinishedSearch

KEEP_ALL = "--keep-all ranks every row as it is"
COLUMN = "in_findings"
MODEL_KEYS = ("architecture", "run", "epoch")
_TRUE, _FALSE = {"true", "1", "1.0", "yes"}, {"false", "0", "0.0", "no"}


@dataclasses.dataclass(frozen=True)
class TableFindings:
    """The rows to rank and what was left out: ``keep`` bool[N] over the table's rows,
    ``left_out`` model label -> why, ``source`` where that was read, ``group_by`` the search's
    grouping (None: all rows only, or not a search's table), ``filter0`` the search's filter0
    semantics (None: not a search's run folder)."""

    keep: np.ndarray
    left_out: dict[str, str]
    source: str
    group_by: str | None = None
    filter0: str | None = None

    def note(self) -> str:
        """One line saying what was left out and how to keep it."""
        models = "; ".join(f"{label} ({why})" for label, why in self.left_out.items())
        return (f"left out {len(self.left_out)} model(s), {int((~self.keep).sum())} rows, as the search's findings "
                f"do ({self.source}): {models}; {KEEP_ALL}")


def _labels(table: pd.DataFrame) -> list[str]:
    return [model_label(a, r, e) for a, r, e in zip(*(_key_column(table, k) for k in MODEL_KEYS))]


def _key_column(table: pd.DataFrame, key: str) -> list[str]:
    """A model key column as text ("1", not "1.0": read_table makes numeric columns floats)."""
    values = table[key].tolist()
    return [str(int(v)) if isinstance(v, float) and float(v).is_integer() else str(v) for v in values]


def _flags(path, values: pd.Series) -> np.ndarray:
    """bool[N] of an ``in_findings`` column (true/false, 1/0); a ValueError naming the first other cell."""
    text = values.astype(str).str.strip().str.lower()
    bad = ~text.isin(_TRUE | _FALSE)
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise ValueError(f"{path}: column {COLUMN!r} has {values.iloc[row]!r} in row {row + 1} (expected true or "
                         f"false); {KEEP_ALL}")
    return text.isin(_TRUE).to_numpy()


def _by_model(path, table: pd.DataFrame, kept: dict[str, bool], why: dict[str, str],
              source: str) -> TableFindings:
    """The rows of the models ``kept`` says are in the findings; every model of the table must be named."""
    labels = _labels(table)
    missing = [label for label in dict.fromkeys(labels) if label not in kept]
    if missing:
        raise ValueError(f"{path}: model {missing[0]} is not in {source}, so that is not this table's search; "
                         f"{KEEP_ALL}")
    keep = np.array([kept[label] for label in labels], bool)
    left = {label: why.get(label, f"{COLUMN} false") for label in dict.fromkeys(labels) if not kept[label]}
    return TableFindings(keep, left, source)


def _from_search(path: Path, table: pd.DataFrame) -> TableFindings:
    try:
        run = FinishedSearch.open(path.parent, option="--table")
    except ValueError as err:
        raise ValueError(f"{err} (the search's findings leave models out of the ranking; {KEEP_ALL})") from None
    kept = {m.label: m.label not in run.left_out for m in run.models}
    found = _by_model(path, table, kept, run.left_out, f"{path.parent / MANIFEST}")
    return dataclasses.replace(found, group_by=run.manifest.get("group_by") or None, filter0=run.filter0)


def _from_models_file(path: Path, table: pd.DataFrame, models_path: Path) -> TableFindings:
    models = pd.read_csv(models_path, sep="\t", dtype=str, keep_default_na=False)
    lacking = [key for key in MODEL_KEYS if key not in models.columns]
    if lacking:
        raise ValueError(f"{models_path}: no column {lacking[0]!r}, so its {COLUMN} cannot be matched to {path}'s "
                         f"rows; {KEEP_ALL}")
    flags = _flags(models_path, models[COLUMN])
    labels = _labels(models)
    flag = models["flag"].tolist() if "flag" in models.columns else [""] * len(models)
    why = {label: f"{COLUMN} false" + (f": {text}" if text else "") for label, text in zip(labels, flag)}
    return _by_model(path, table, dict(zip(labels, flags)), why, f"{models_path}, column {COLUMN}")


def table_findings(path, table: pd.DataFrame) -> TableFindings | None:
    """The exclusions of a search's table read from beside it or from it (module docstring), or
    None when there are none to read (any other table: ranked as given).

    Raises ``ValueError`` (one line, naming the file) when they are there but do not fit the table."""
    path = Path(path)
    if COLUMN in table.columns:
        keep = _flags(path, table[COLUMN])
        labels = _labels(table) if all(k in table.columns for k in MODEL_KEYS) else [f"row {i + 1}"
                                                                                    for i in range(len(table))]
        left = {label: f"{COLUMN} false" for label, k in zip(labels, keep) if not k}
        found = TableFindings(keep, left, f"{path}, column {COLUMN}")
    elif path.name == "table.tsv" and (path.parent / MANIFEST).is_file():
        found = _from_search(path, table)
    elif path.name == "table.tsv" and (path.parent / "models.tsv").is_file():
        models_path = path.parent / "models.tsv"
        header = pd.read_csv(models_path, sep="\t", nrows=0).columns
        if COLUMN not in header:
            return None
        found = _from_models_file(path, table, models_path)
    else:
        return None
    if found.keep.sum() < 2 and len(found.left_out):
        raise ValueError(f"{found.source}: leaves fewer than 2 rows of {path}; {KEEP_ALL}")
    return found
