"""``pregen-search predict`` (formerly ``score``): new models' post-gen scores predicted from their
reference probabilities, calibrated on a finished search's models."""
from __future__ import annotations

import argparse

from .base import Command, renamed


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search", required=True, help="a finished search's run folder (its models calibrate)")
    parser.add_argument("--refprobs", required=True, nargs="+", metavar="NPZ",
                        help="each new model's RefProbs .npz, computed on the search's test references "
                             "(RefProbs.save records their fingerprint)")
    parser.add_argument("--captions", nargs="+", default=None, metavar="FILE",
                        help="each model's captions of the test images (JSONL or TSV keyed by image_id, or one a "
                             "line in test-split order; one file per --refprobs file, same order): its post-gen "
                             "scores are measured beside the predictions")
    parser.add_argument("--out", default=None, help="also write scores.tsv, order.tsv and pairs.tsv into this folder")
    parser.add_argument("--pregen", default=None, help="the pre-gen metric to calibrate (default: each post-gen "
                                                       "metric's best by R^2 in the search)")
    parser.add_argument("--level", type=float, default=0.9, help="prediction interval level (default 0.9)")


def _run(args: argparse.Namespace) -> int:
    from .. import io
    from ..pipeline.finished import FinishedSearch
    from ..pipeline.score import render, score
    renamed(args, COMMAND.name)
    run = FinishedSearch.open(args.search)
    out = io.check_out_folder(args.out) if args.out else None
    scores = score(run, args.refprobs, args.pregen, args.level, args.captions)
    print(render(scores))
    if out is not None:
        with io.staged_folder(out) as staging:
            io.write_tsv(scores.predictions, staging / "scores.tsv")
            io.write_tsv(scores.order.assign(tokenizer=run.tokenizer), staging / "order.tsv")
            io.write_tsv(scores.pairs.assign(tokenizer=run.tokenizer), staging / "pairs.tsv")
        print(f"wrote {out}/scores.tsv, order.tsv, pairs.tsv")
    return 0


COMMAND = Command("predict", "new models' post-gen scores predicted from their reference probabilities, with "
                             "intervals, their order, and the pairs the intervals cannot separate "
                             "(formerly `score`, which works for this version)",
                  _arguments, _run, aliases=("score",))
