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
    parser.add_argument("--filter0", choices=("top-choice", "not-top-choice"), default=None,
                        help="which positions the table's *_filter0 columns keep: top-choice (the 2018 paper's text, a "
                             "search's default) or not-top-choice (the 2018 code, so the 2018 table data.txt); a "
                             "search's table.tsv says it in its filter0 column; written into every output")
    parser.add_argument("--unit-tests", default=None, help="a pregen_unit_tests.tsv: flag the metrics that fail a "
                                                           "meaning-preserving test (pass rate below 50%%)")


def _names(text: str | None) -> list[str]:
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def _filter0(args: argparse.Namespace, table, search: str | None) -> str:
    """The table's filter0 semantics: its ``filter0`` column (else ``search``'s, read from its run
    folder), else ``--filter0``, else ``unknown``; a ``--filter0`` they contradict is an error."""
    stated = sorted(map(str, table["filter0"].unique())) if "filter0" in table.columns else []
    stated = stated or ([search] if search else [])
    if len(stated) > 1:
        raise ValueError(f"{args.table}: column 'filter0' holds {', '.join(stated)}: rows of different filter0 "
                         "semantics cannot be ranked together")
    if stated and args.filter0 and stated[0] != args.filter0:
        raise ValueError(f"--filter0 {args.filter0}: {args.table} says its filter0 is {stated[0]}")
    if stated or args.filter0:
        return stated[0] if stated else args.filter0
    if any(str(c).endswith("_filter0") for c in table.columns):
        print(f"note: {args.table} does not say what its *_filter0 columns keep (no filter0 column): the outputs say "
              "filter0 unknown; --filter0 top-choice or not-top-choice states it (the 2018 table data.txt: "
              "not-top-choice)", file=sys.stderr)
    return "unknown"


def _run(args: argparse.Namespace) -> int:
    from .. import io, postgen, ranking
    from ..pipeline.config import ID_COLUMNS
    from ..pipeline.table_findings import COLUMN, table_findings
    from ..ranking import decisions
    from ..ranking.columns import rank_columns
    out = io.check_out_folder(args.out)
    table = ranking.read_table(args.table)
    findings = None if args.keep_all else table_findings(args.table, table)
    filter0 = _filter0(args, table, findings.filter0 if findings else None)
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
                              models_left_out=findings.left_out if findings else None, filter0=filter0)
        ranking.write_files(staging, model_level, tokenizer, filter0)
        if args.unit_tests:
            from ..meta.model_tests_report import add_unit_test_flags
            add_unit_test_flags(staging, result, tests, str(args.unit_tests), tokenizer, str(args.table), filter0,
                                findings.left_out if findings else None)
    print(f"ranked {len(columns.pregen) - len(result.excluded)} of {len(columns.pregen)} pre-gen metrics against "
          f"{', '.join(result.correlations)} (filter0: {filter0}); wrote {out}")
    for name, df in result.correlations.items():
        print(f"  {name:8s} best {df['pregen'].iloc[0]}  R^2={df['all_R^2'].iloc[0]:.3f}")
    return 0


COMMAND = Command("rank", "rank the pre-gen metrics of a table of data points", _arguments, _run)
