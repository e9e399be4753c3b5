"""``pregen-search unit-tests``: MUTT-style unit tests of the pre-gen metrics of a finished search."""
from __future__ import annotations

import argparse

from .base import Command, progress_lines, seed


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search", required=True, help="a finished search's run folder (pregen-search run/demo)")
    parser.add_argument("--out", required=True, help="output folder (pregen_unit_tests.tsv, report.md, cache/); the "
                                                     "run folder itself adds the pass rates to its report")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the noise and the image shuffles (default 0)")


def _run(args: argparse.Namespace) -> int:
    from ..meta.model_tests import run_unit_tests
    from ..meta.model_tests_report import pass_rates, top_metrics_table
    run = run_unit_tests(args.search, args.out, seed=args.seed, progress=progress_lines(args))
    for note in run.notes:
        print(note)
    rates = pass_rates(run.table)
    print(f"wrote {args.out} ({run.seconds:.0f} s); mean pass rate (%) over the {len(rates)} metrics: "
          + ", ".join(f"{test} {rates[test].mean():.1f}" for test in rates.columns))
    print(top_metrics_table(run.table, run.correlations))
    return 0


COMMAND = Command("unit-tests", "MUTT-style unit tests of the pre-gen metrics: corrupt a finished search's models "
                                "and check each metric reacts as CIDEr does", _arguments, _run)
