"""``pregen-search demo``: the built-in search (5 architectures x 3 runs on the shapes dataset), then rank."""
from __future__ import annotations

import argparse

from .base import Command
from .search import scale_arguments, search


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="runs/demo", help="run folder (its cache/ resumes a rerun; default runs/demo)")
    parser.add_argument("--quick", action="store_true", help="a small version that finishes in about 2 minutes")
    scale_arguments(parser)


def _run(args: argparse.Namespace) -> int:
    from ..pipeline import demo_config
    return search(demo_config(args.quick), args)


COMMAND = Command("demo", "train 5 architectures x 3 runs on the built-in dataset, then rank", _arguments, _run)
