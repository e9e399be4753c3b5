"""``pregen-search select``: the best of a finished search's models, chosen by racing them on real
post-gen scores."""
from __future__ import annotations

import argparse

from .base import WORDS, Command, warnings_as_lines
from .select_summary import summary_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search", required=True, help="a finished search's run folder (its models race)")
    parser.add_argument("--checkpoints", nargs="*", default=[], metavar="MSGPACK",
                        help="more saved models of this package to race beside the search's")
    parser.add_argument("--captions", nargs="*", default=[], metavar="FILE",
                        help="models that exist only as captions of the split's images, one file each (JSONL or "
                             "TSV keyed by image_id, or one caption a line in split order), to race beside the "
                             "search's")
    parser.add_argument("--metric", default="CIDEr", help="a post-gen metric whose corpus score is the mean of "
                                                          "per-image scores: CIDEr (default), ROUGE_L, WMD, SPICE")
    parser.add_argument("--budget", type=float, default=0.1,
                        help="share of (models x images) that may be decoded and scored (default 0.1)")
    parser.add_argument("--split", default="val", choices=["val", "test"],
                        help="val (default: select on validation images) or test (check a pick against the "
                             "search's whole-split scores)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="1 - alpha for the whole race (Bonferroni over rounds and models; default 0.95)")
    parser.add_argument("--seed", type=int, default=0, help="the random order of the images (default 0)")
    parser.add_argument("--assist", default="none", choices=["none", "perplexity", "pregen", "both"],
                        help="predict per-image scores from one teacher-forced pass over the split (per-image "
                             "perplexity, pre-gen tier space, or both) and race on prediction-powered estimates "
                             "(default none: plain racing); the passes' seconds are counted")
    parser.add_argument("--screen", action="store_true",
                        help="never decode the models the prior (validation perplexity) ranks below the "
                             "--screen-keep share")
    parser.add_argument("--screen-keep", type=float, default=0.5,
                        help="with --screen, the share of models that race, best by the prior (default 0.5)")
    parser.add_argument("--out", required=True, help="output folder (select.tsv)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def _run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from .. import io
    from ..pipeline.finished import FinishedSearch
    from ..selection import run_select
    start = time.perf_counter()
    settings = race_settings(args)
    for option, paths in (("--checkpoints", args.checkpoints), ("--captions", args.captions)):
        for path in paths:
            if not Path(path).is_file():
                raise ValueError(f"{option}: {path}: file not found")
    out = io.check_out_folder(args.out)
    run = FinishedSearch.open(args.search)
    with warnings_as_lines():
        table, selection, notes = run_select(run, args.metric, settings, args.checkpoints, args.captions,
                                             progress=not args.no_progress)
    for note in notes:
        print(note)
    with io.staged_folder(out) as staging:
        io.write_tsv(table, staging / "select.tsv")
    print("\n".join(summary_lines(table, selection, time.perf_counter() - start)))
    print(f"wrote {out}/select.tsv")
    print(WORDS)
    return 0


def race_settings(args: argparse.Namespace):
    """The race's settings from the options, validated once; a bad one is named as its option."""
    import pydantic

    from ..ranking.racing import RaceSettings
    options = {"budget": "--budget", "confidence": "--confidence", "seed": "--seed", "assist": "--assist",
               "screen": "--screen-keep", "split": "--split"}
    try:
        return RaceSettings(budget=args.budget, confidence=args.confidence, seed=args.seed, assist=args.assist,
                            screen=args.screen_keep if args.screen else None, split=args.split)
    except pydantic.ValidationError as err:
        first = err.errors(include_url=False)[0]
        option = options.get(str(first["loc"][0]) if first["loc"] else "", "select")
        raise ValueError(f"{option} {first.get('input')!r}: {first['msg']}") from None


COMMAND = Command("select", "choose the best of a search's models by racing: real post-gen scores on growing "
                            "random subsets, dropping models shown worse", _arguments, _run)
