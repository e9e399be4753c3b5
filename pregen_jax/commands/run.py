"""``pregen-search run``: a search from a TOML config."""
from __future__ import annotations

import argparse

from .base import Command
from .search import scale_arguments, search


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="the search's TOML config")
    parser.add_argument("--out", required=True, help="run folder (its cache/ resumes a rerun)")
    scale_arguments(parser)


def _run(args: argparse.Namespace) -> int:
    from ..pipeline import SearchConfig
    return search(SearchConfig.load(args.config), args, args.config)


COMMAND = Command("run", "run a search from a TOML config (see search/configs/)", _arguments, _run)
