"""Reading and writing the data-point tables (TSV/CSV) that ranking consumes.

A table has one row per data point (model x stratum): identifying columns (dataset,
architecture, run, num_strata, stratum, ...), post-gen columns and pre-gen columns, the
layout of ``../shared/data/pregen-metrics-2018/data.txt``. Pre-gen columns are recognised by
name (``tier4_tier3_tier2_tier1`` with registered tier functions).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import atomic
from .tiers import parse_metric_name

# Post-gen metric names as pycocoevalcap and the 2018 table spell them.
KNOWN_POSTGEN = ("METEOR", "CIDEr", "SPICE", "WMD", "Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L")
ID_COLUMNS = ("dataset", "architecture", "run", "num_strata", "stratum", "model", "tokenizer")


def read_table(path) -> pd.DataFrame:
    """Read a TSV or CSV table (separator detected from the header line)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    with open(path, encoding="utf-8", errors="replace") as f:
        header = f.readline()
    if not header.strip():
        raise ValueError(f"{path}: empty file (expected a header line)")
    sep = "\t" if "\t" in header else ","
    try:
        table = pd.read_csv(path, sep=sep)
    except Exception as err:
        raise ValueError(f"{path}: cannot be read as a {'TSV' if sep == chr(9) else 'CSV'} table: {err}") from err
    if len(table) == 0:
        raise ValueError(f"{path}: the table has a header but no rows")
    return table


def pregen_columns(table: pd.DataFrame) -> list[str]:
    """Columns whose names are pre-gen metric names, in table order."""
    return [c for c in table.columns if isinstance(c, str) and parse_metric_name(c) is not None]


def postgen_columns(table: pd.DataFrame) -> list[str]:
    """Known post-gen columns present in the table, in table order."""
    known = {k.lower() for k in KNOWN_POSTGEN}
    return [c for c in table.columns if isinstance(c, str) and c.lower() in known]


def check_numeric(table: pd.DataFrame, columns: list[str], path) -> None:
    """Raise ``ValueError`` naming the file, column and row of the first non-numeric cell."""
    for column in columns:
        numeric = pd.to_numeric(table[column], errors="coerce")
        bad = numeric.isna() & table[column].notna()
        if bad.any():
            row = int(bad.to_numpy().argmax())
            raise ValueError(f"{path}: column {column!r}, row {row + 2} (line in file): "
                             f"{table[column].iloc[row]!r} is not a number")
        table[column] = numeric.astype(float)


def write_tsv_atomic(frame: pd.DataFrame, path) -> None:
    """Write a TSV so that readers never see a half-written file."""
    atomic.write_text(frame.to_csv(sep="\t", index=False, float_format="%.10g"), path)


def write_text_atomic(text: str, path) -> None:
    """Write a text file atomically (temp file + rename)."""
    atomic.write_text(text, path)
