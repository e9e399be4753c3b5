"""`pregen-search`: the command line (argparse subcommands)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _rank(args) -> int:
    from . import ranking, tables

    table = tables.read_table(args.table)
    pregen = tables.pregen_columns(table)
    if not pregen:
        raise ValueError(f"{args.table}: no pre-gen columns recognised (names like mean_max_normcount_prefix0)")
    postgen = args.postgen.split(",") if args.postgen else tables.postgen_columns(table)
    if not postgen:
        raise ValueError(f"{args.table}: no post-gen columns found; name them with --postgen METEOR,CIDEr,...")
    missing = [c for c in postgen if c not in table.columns]
    if missing:
        raise ValueError(f"{args.table}: no post-gen column(s) {missing}")
    if args.group_by and args.group_by not in table.columns:
        raise ValueError(f"{args.table}: no column {args.group_by!r} to group by")
    tables.check_numeric(table, pregen + postgen, args.table)
    result = ranking.rank(table, postgen, pregen, group_by=args.group_by)
    tokenizer = (", ".join(map(str, table["tokenizer"].unique())) if "tokenizer" in table.columns
                 else "as in the input table (no tokenizer column)")
    ranking.write_ranking(result, Path(args.out), tokenizer, source=str(args.table))
    print(f"ranked {len(pregen) - len(result.excluded)} of {len(pregen)} pre-gen metrics against "
          f"{', '.join(result.correlations)}; wrote {args.out}")
    for post, df in result.correlations.items():
        print(f"  {post:8s} best {df['pregen'].iloc[0]}  R^2={df['all_R^2'].iloc[0]:.3f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pregen-search", description=(
        "Pre-gen metrics: rank ways of scoring a caption generator from its reference "
        "probabilities by how well they predict post-gen metrics."))
    sub = parser.add_subparsers(dest="command", required=True)

    rank = sub.add_parser("rank", help="rank pre-gen metrics in a table of data points")
    rank.add_argument("--table", required=True, help="TSV/CSV shaped like pregen-metrics-2018/data.txt")
    rank.add_argument("--out", required=True, help="output folder")
    rank.add_argument("--group-by", default=None, help="column defining groups (e.g. dataset)")
    rank.add_argument("--postgen", default=None, help="comma-separated post-gen columns (default: detected)")
    rank.set_defaults(func=_rank)

    from .pipeline.cli import add_commands
    add_commands(sub)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError) as err:
        print(f"pregen-search {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"pregen-search {args.command}: interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
