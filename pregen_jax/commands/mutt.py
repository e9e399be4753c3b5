"""``pregen-search mutt``: MUTT metric unit tests of the post-gen metrics."""
from __future__ import annotations

import argparse

from .base import Command, progress_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (mutt.tsv, mutt_heatmap.png, report.md)")
    parser.add_argument("--data", default=None, help="MUTT test sets (default: ../shared/data/mutt)")
    parser.add_argument("--refs", default="5,10,20", help="numbers of references, comma-separated (default 5,10,20)")
    parser.add_argument("--metrics", default=None, help="comma-separated post-gen metrics (default: all registered)")


def _run(args: argparse.Namespace) -> int:
    from ..meta import run_mutt
    result = run_mutt(args.out, data=args.data, ks=args.refs, metrics=args.metrics, progress=progress_lines(args))
    for name, why in result.unavailable.items():
        print(f"{name} unavailable: {why}")
    print(f"wrote {args.out}/mutt.tsv, mutt_heatmap.png, report.md ({result.seconds:.0f} s); mean accuracy (%):")
    print(result.table.pivot_table(index="metric", columns="refs", values="accuracy", sort=False).round(1).to_string())
    return 0


COMMAND = Command("mutt", "MUTT metric unit tests of the post-gen metrics (corrupted sentences)", _arguments, _run)
