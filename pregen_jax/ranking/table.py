"""Reading the data-point tables that ranking consumes, strictly.

A table has one row per data point (model x stratum): identifying columns (dataset,
architecture, run, num_strata, stratum, ...), post-gen columns and pre-gen columns, the layout
of ``../shared/data/pregen-metrics-2018/data.txt``. Pre-gen columns are recognised by name
(``tier4_tier3_tier2_tier1`` with registered tier functions). Anything that would make a
ranking silently wrong (a ragged row, a duplicated column, an empty or non-finite post-gen
cell) is an error naming the file, the line and the column.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..metric_names import POSTGEN_NAMES

KNOWN_POSTGEN = POSTGEN_NAMES  # how pycocoevalcap and the 2018 table spell them; the registry adds its own


def read_table(path) -> pd.DataFrame:
    """A TSV or CSV table (separator from the header line); numeric columns become floats.

    ``table.attrs["path"]`` keeps the file name and ``table.attrs["lines"]`` the file line of
    each row, for error messages.
    """
    path = Path(path)
    text = io.read_text(path, "table")
    lines = io.split_lines(text)
    if not lines or not lines[0].strip():
        raise ValueError(f"{path}: empty file (expected a header line)")
    sep = "\t" if "\t" in lines[0] else ","
    reader = _rows(path, lines, sep)
    header = next(reader)
    blank = [k + 1 for k, name in enumerate(header) if not name.strip()]
    if blank:
        raise ValueError(f"{path}: header column {blank[0]} has no name")
    seen = {}
    for k, name in enumerate(header):
        if name in seen:
            raise ValueError(f"{path}: column {name!r} appears twice in the header (columns {seen[name] + 1} "
                             f"and {k + 1})")
        seen[name] = k
    rows, line_numbers = [], []
    for line_no, row in enumerate(reader, 2):
        if not row or not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise ValueError(f"{path}, line {line_no}: {len(row)} fields, but the header has {len(header)}")
        rows.append(row)
        line_numbers.append(line_no)
    if not rows:
        raise ValueError(f"{path}: the table has a header but no rows")
    table = pd.DataFrame(rows, columns=header)
    for column in header:
        numeric, parsed, empty = _parse(table[column])
        if parsed.all():
            table[column] = numeric
    table.attrs.update(path=str(path), lines=line_numbers)
    return table


def _rows(path: Path, lines: list[str], sep: str):
    """The cells of each line; a row never spans lines, and a quote left open is an error naming the line.
    A TSV has no quoting at all (a quote is part of its cell), as the 2018 table is written."""
    quoting = csv.QUOTE_NONE if sep == "\t" else csv.QUOTE_MINIMAL
    for line_no, line in enumerate(lines, 1):
        try:
            yield next(csv.reader([line], delimiter=sep, quoting=quoting, strict=True), [])
        except csv.Error as err:
            raise ValueError(f"{path}, line {line_no}: {err} (a quote left open?)") from None


def _parse(cells: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(values f64[N], parsed bool[N], empty bool[N]) of text cells; "nan" and "inf" are numbers."""
    if pd.api.types.is_numeric_dtype(cells):  # parsed already by read_table: every cell was a number
        values = cells.to_numpy(np.float64)
        return values, np.ones(len(values), bool), np.zeros(len(values), bool)
    text = cells.astype(str).str.strip()
    empty = (text == "").to_numpy()
    numeric = pd.to_numeric(text.where(~empty, None), errors="coerce").to_numpy(np.float64)
    nan_literal = text.str.lower().isin(("nan", "+nan", "-nan")).to_numpy()
    return numeric, ~empty & (~np.isnan(numeric) | nan_literal), empty


def _where(table: pd.DataFrame, row: int) -> str:
    path, lines = table.attrs.get("path"), table.attrs.get("lines")
    if path and lines:
        return f"{path}, line {lines[row]}"
    return f"row {row}"


def check_numeric(table: pd.DataFrame, columns, allow_inf: bool) -> None:
    """Every cell of ``columns`` must be a number (not inf, without ``allow_inf``: post-gen values,
    which may be NaN where the metric could not score a data point); else ValueError naming it."""
    for column in columns:
        numeric, parsed, empty = _parse(table[column])
        if not parsed.all():
            row = int(np.argmax(~parsed))
            what = "an empty cell" if empty[row] else f"{table[column].iloc[row]!r}, not a number"
            raise ValueError(f"{_where(table, row)}: column {column!r} has {what}")
        if not allow_inf and np.isinf(numeric).any():
            row = int(np.argmax(np.isinf(numeric)))
            raise ValueError(f"{_where(table, row)}: column {column!r} is {numeric[row]}; post-gen values must be "
                             "finite numbers, or NaN where the metric could not score the data point")
        table[column] = numeric


def pregen_columns(table: pd.DataFrame) -> list[str]:
    """Columns whose names are pre-gen metric names, in table order."""
    from ..tiers import parse_metric_name
    return [c for c in table.columns if isinstance(c, str) and parse_metric_name(c) is not None]


def postgen_columns(table: pd.DataFrame, known=KNOWN_POSTGEN) -> list[str]:
    """Known post-gen columns present in the table, in table order."""
    known = {k.lower() for k in known}
    return [c for c in table.columns if isinstance(c, str) and c.lower() in known]
