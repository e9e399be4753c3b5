"""``pregen-search rank``: rank the pre-gen metrics of any table of data points."""
from __future__ import annotations

import argparse
import sys

from .base import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", required=True, help="TSV/CSV shaped like pregen-metrics-2018/data.txt")
    parser.add_argument("--out", required=True, help="output folder")
    parser.add_argument("--group-by", default=None, help="column defining groups (e.g. dataset)")
    parser.add_argument("--postgen", default=None, help="comma-separated post-gen columns (default: detected)")
    parser.add_argument("--pregen", default=None, help="comma-separated columns to rank as pre-gen metrics besides "
                                                       "those named like one (e.g. a perplexity column of your own)")
    parser.add_argument("--ignore", default=None, help="comma-separated columns to leave out (any other column rank "
                                                       "does not know is an error)")
    parser.add_argument("--keep-all", action="store_true",
                        help="on a search's table.tsv: rank every row, the models its findings leave out (degenerate "
                             "captions; models.tsv's in_findings false) too; by default rank leaves them out, as the "
                             "search's report does, and says which")
    parser.add_argument("--unit-tests", default=None, help="a pregen_unit_tests.tsv: flag the metrics that fail a "
                                                           "meaning-preserving test (pass rate below 50%%)")


def _names(text: str | None) -> list[str]:
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _run(args: argparse.Namespace) -> int:
    from .. import io, postgen, ranking
    from ..pipeline.config import ID_COLUMNS
    from ..pipeline.table_findings import COLUMN, table_findings
    from ..ranking import decisions
    from ..ranking.columns import rank_columns
    out = io.check_out_folder(args.out)
    table = ranking.read_table(args.table)
    findings = None if args.keep_all else table_findings(args.table, table)
    group_by = args.group_by or (findings.group_by if findings else None)
    post = [name.strip() for name in args.postgen.split(",")] if args.postgen else None
    columns = rank_columns(args.table, table, post=post, pregen=_names(args.pregen),
                           ignore=[*_names(args.ignore), *([COLUMN] if COLUMN in table.columns else [])],
                           group_by=group_by, known_postgen=postgen.metric_names(), id_columns=ID_COLUMNS)
    if args.unit_tests:
        from ..meta.model_tests_report import read_unit_tests
        tests = read_unit_tests(args.unit_tests)
    if findings is not None:
        if findings.left_out:
            print(f"note: {findings.note()}", file=sys.stderr)
        if findings.group_by and not args.group_by:
            print(f"note: grouped by {group_by}, as the search was ({findings.source})", file=sys.stderr)
        lines = [line for line, keep in zip(table.attrs.get("lines", []), findings.keep) if keep]
        table = table[findings.keep].reset_index(drop=True)
        table.attrs["lines"] = lines  # error messages name the file's lines
    try:
        result = ranking.rank(table, columns.post, columns.pregen, group_by=group_by)
    except ValueError as err:
        raise ValueError(f"{args.table}: {err}") from None
    if not result.correlations:
        raise ValueError(f"{args.table}: {'; '.join(result.excluded_postgen.values())}")
    for why in result.excluded_postgen.values():
        print(f"warning: {why}; ranked against the other post-gen columns", file=sys.stderr)
    for post, why in result.rows_left_out.items():
        print(f"note: {post}: {why}", file=sys.stderr)
    tokenizer = (", ".join(map(str, table["tokenizer"].unique())) if "tokenizer" in table.columns
                 else "as in the input table (no tokenizer column)")
    model_level = {}
    if decisions.NUM_STRATA in table.columns and (table[decisions.NUM_STRATA] == 1).sum() >= 2:
        try:
            model_level = ranking.decision_outputs(table, result.correlations, group_by)
        except ValueError as err:  # a step after the table: say why it was skipped, write the rest
            print(f"warning: model-level decisions not done for this table: {' '.join(str(err).split())}",
                  file=sys.stderr)
    with io.staged_folder(out) as staging:
        ranking.write_ranking(result, staging, tokenizer, source=str(args.table),
                              models_left_out=findings.left_out if findings else None)
        ranking.write_files(staging, model_level, tokenizer)
        if args.unit_tests:
            from ..meta.model_tests_report import add_unit_test_flags
            add_unit_test_flags(staging, result, tests, str(args.unit_tests), tokenizer, str(args.table))
    print(f"ranked {len(columns.pregen) - len(result.excluded)} of {len(columns.pregen)} pre-gen metrics against "
          f"{', '.join(result.correlations)}; wrote {out}")
    for name, df in result.correlations.items():
        print(f"  {name:8s} best {df['pregen'].iloc[0]}  R^2={df['all_R^2'].iloc[0]:.3f}")
    return 0


COMMAND = Command("rank", "rank the pre-gen metrics of a table of data points", _arguments, _run)
