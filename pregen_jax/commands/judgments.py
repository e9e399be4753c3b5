"""``pregen-search judgments``: Kendall tau of the post-gen metrics with Flickr8k's human judgments."""
from __future__ import annotations

import argparse

from .base import Command, progress_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="output folder (judgments.tsv, report.md)")
    parser.add_argument("--flickr8k", default=None, help="Flickr8k folder (default: ../shared/data/flickr8k)")
    parser.add_argument("--metrics", default=None, help="comma-separated post-gen metrics (default: all registered)")


def _run(args: argparse.Namespace) -> int:
    from ..meta import run_judgments
    result = run_judgments(args.out, flickr8k=args.flickr8k, metrics=args.metrics, progress=progress_lines(args))
    for name, why in result.unavailable.items():
        print(f"{name} unavailable: {why}")
    print(f"wrote {args.out}/judgments.tsv, report.md ({result.seconds:.0f} s); Kendall tau x 100:")
    table = result.table.assign(tau=100 * result.table["tau"])
    print(table.pivot_table(index="metric", columns=["dataset", "variant"], values="tau", sort=False)
          .round(1).to_string())
    return 0


COMMAND = Command("judgments", "Kendall tau of the post-gen metrics with Flickr8k human judgments", _arguments, _run)
