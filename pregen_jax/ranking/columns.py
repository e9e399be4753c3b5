"""Which columns of a data-point table ``pregen-search rank`` ranks, checked before any work.

A table holds id columns, text columns a search writes, post-gen columns (what the pre-gen
metrics are ranked against) and pre-gen columns (named like ``mean_max_normcount_prefix0``, or
named by the user). Any other column is an error, not a silent omission: the user names it as
a pre-gen metric or leaves it out.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pandas as pd

from .table import KNOWN_POSTGEN, check_numeric, postgen_columns, pregen_columns

KNOWN_TEXT_COLUMNS = ("tokenizer", "filter0", "vocabulary", "units", "decoding")  # what a search's tables carry besides ids


@dataclasses.dataclass(frozen=True)
class RankColumns:
    """The columns to rank: ``pregen`` (recognised by name, then those named) against ``post``."""

    pregen: list[str]
    post: list[str]


def rank_columns(path, table: pd.DataFrame, *, post: Sequence[str] | None = None, pregen: Sequence[str] = (),
                 ignore: Sequence[str] = (), group_by: str | None = None, known_postgen: Sequence[str] = (),
                 id_columns: Sequence[str] = ()) -> RankColumns:
    """The columns of ``table`` (read from ``path``) to rank, every one checked: ``post`` the post-gen
    columns named (None: those ``known_postgen`` names, besides pycocoevalcap's), ``pregen`` more
    columns to rank besides those named like a pre-gen metric, ``ignore`` columns to leave out.

    Raises ``ValueError`` naming the file and the column (and the option that names it)."""
    found = pregen_columns(table)
    if not found and not pregen:
        raise ValueError(f"{path}: no pre-gen columns recognised (names like mean_max_normcount_prefix0; "
                         "name others with --pregen)")
    known = (*KNOWN_POSTGEN, *known_postgen)
    if post is not None:
        post = list(post)
        missing = [c for c in post if c not in table.columns]
        if missing:
            raise ValueError(f"{path}: no post-gen column {missing[0]!r} (--postgen)")
        both = [c for c in post if c in found]
        if both:
            raise ValueError(f"--postgen {','.join(post)}: {both[0]!r} is a pre-gen column of {path}; "
                             "name post-gen columns only (they are what the pre-gen metrics are ranked against)")
        if len(set(post)) != len(post):
            raise ValueError(f"--postgen names a column twice: {','.join(post)}")
    else:
        post = postgen_columns(table, known)
        if not post:
            raise ValueError(f"{path}: no post-gen columns found; name them with --postgen METEOR,CIDEr,...")
    if group_by and group_by not in table.columns:
        raise ValueError(f"{path}: no column {group_by!r} to group by")
    found += _named_columns(path, table, pregen, "--pregen", exclude=found + post)
    ignored = _named_columns(path, table, ignore, "--ignore", exclude=found + post)
    _refuse_unknown_columns(path, table, {*id_columns, *KNOWN_TEXT_COLUMNS, *found, *post, *ignored, group_by},
                            known, id_columns)
    check_numeric(table, post, allow_inf=False)
    check_numeric(table, found, allow_inf=True)
    return RankColumns(found, post)


def _named_columns(path, table: pd.DataFrame, names: Sequence[str], option: str, exclude=()) -> list[str]:
    """Columns named by an option, each checked to exist (and not be used twice)."""
    for name in names:
        if name not in table.columns:
            raise ValueError(f"{path}: no column {name!r} ({option})")
        if name in exclude:
            raise ValueError(f"{option} {name}: already ranked (a pre-gen or post-gen column)")
    return list(names)


def _refuse_unknown_columns(path, table: pd.DataFrame, used: set, known_postgen: Sequence[str],
                            id_columns: Sequence[str]) -> None:
    """A column rank would not read is an error: name it with --pregen to rank it as a pre-gen
    metric (a perplexity column of your own, say), or with --ignore."""
    lower = {name.lower() for name in known_postgen}
    unknown = [c for c in table.columns if c not in used and str(c).lower() not in lower]
    if unknown:
        name = unknown[0]
        raise ValueError(f"{path}: column {name!r} is not a pre-gen metric name (like "
                         "mean_max_normcount_prefix0), a post-gen metric or an id column "
                         f"({', '.join(id_columns)}); rank it as a pre-gen metric with --pregen {name}, or leave it "
                         f"out with --ignore {name}" + (f" ({len(unknown)} such columns: {', '.join(map(str, unknown))})"
                                                         if len(unknown) > 1 else ""))
