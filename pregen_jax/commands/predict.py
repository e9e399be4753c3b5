"""``pregen-search predict`` (formerly ``score``): new models' post-gen scores predicted from their
reference probabilities, calibrated on a finished search's models."""
from __future__ import annotations

import argparse

from .base import WORDS, Command, check_caption_files, renamed, warnings_as_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search", required=True, help="a finished search's run folder (its models calibrate)")
    parser.add_argument("--refprobs", required=True, nargs="+", metavar="NPZ",
                        help="each new model's RefProbs .npz, computed on the search's test references "
                             "(RefProbs.save records their fingerprint)")
    parser.add_argument("--captions", nargs="+", default=None, metavar="FILE",
                        help="each model's captions of the test images (a COCO results file, JSONL or TSV keyed by "
                             "image_id, or one a line in test-split order; one file per --refprobs file, same order): its post-gen "
                             "scores are measured beside the predictions")
    parser.add_argument("--out", default=None, help="also write scores.tsv, order.tsv and pairs.tsv into this folder")
    parser.add_argument("--pregen", default=None, help="the pre-gen metric to calibrate (default: each post-gen "
                                                       "metric's best by R^2 over the calibration models, chosen "
                                                       "again inside every fit of the interval)")
    parser.add_argument("--level", type=float, default=0.9,
                        help="the intervals' guaranteed coverage after choosing (default 0.9; n calibration models "
                             "allow at most n/(n+1): 9 models for 0.9)")


def _run(args: argparse.Namespace) -> int:
    import time

    from .. import io
    from ..pipeline.finished import FinishedSearch
    from ..prediction import calibration_set, predict_scores
    from ..prediction.calibrated import load_checked
    start = time.perf_counter()
    renamed(args, COMMAND.name)
    check_caption_files(args.captions or [], "--captions")  # before the search opens
    if args.captions is not None and len(args.captions) != len(args.refprobs):
        raise ValueError(f"--captions: {len(args.captions)} file(s) for {len(args.refprobs)} --refprobs file(s); "
                         "give one captions file per model, in the same order")
    run = FinishedSearch.open(args.search)
    calibration = calibration_set(run, args.pregen, args.level)  # refuses too few models before any work
    out = io.check_out_folder(args.out) if args.out else None
    loaded = load_checked(run, args.refprobs)  # every file matched to the search before a line is printed
    print(calibration.describe(), flush=True)
    with warnings_as_lines():
        scores = predict_scores(run, args.refprobs, args.pregen, args.level, args.captions, calibration, loaded)
    print(_render(scores))
    print(f"tokenizer: {run.tokenizer} (the search's own: its scores, and any --captions measured here)")
    print(f"{len(args.refprobs)} model(s) predicted in {time.perf_counter() - start:.1f} s (the whole run)")
    if out is not None:
        with io.staged_folder(out) as staging:
            io.write_tsv(scores.predictions, staging / "scores.tsv")
            io.write_tsv(scores.order.assign(tokenizer=run.tokenizer), staging / "order.tsv")
            io.write_tsv(scores.pairs.assign(tokenizer=run.tokenizer), staging / "pairs.tsv")
        print(f"wrote {out}/scores.tsv, order.tsv, pairs.tsv")
    print(WORDS)
    return 0


def _render(scores) -> str:
    """The printed table: per post-gen metric, each model's two predictions, then order and inseparable pairs."""
    import numpy as np
    import pandas as pd

    from ..prediction import CHOSEN, PERPLEXITY
    p = scores.predictions
    level = f"{100 * scores.level:g}%"
    lines = []
    for post, rows in p.groupby("postgen", sort=False):
        chosen = rows[rows["predictor"] == CHOSEN]
        pplx = rows[rows["predictor"] == PERPLEXITY].set_index("model")
        metric = scores.calibration.chosen[post]
        lines += [f"{post} (range {chosen['range'].iloc[0]}; {level} conformal sets, valid after choosing; "
                  f"chosen pre-gen metric {metric})"]
        table = []
        for _, row in chosen.iterrows():
            both = [row]
            entry = {"model": row["model"], "perplexity": f"{row['perplexity']:.3f}",
                     metric: f"{row['pregen_value']:.4g}" + (f" ({row['pregen']})" if row["pregen"] != metric else ""),
                     "predicted": _interval(row)}
            if row["model"] in pplx.index:
                other = pplx.loc[row["model"]]
                both.append(other)
                entry["from perplexity"] = _interval(other)
                entry["narrower"] = ("pre-gen" if row["narrower"] else "perplexity" if other["narrower"]
                                     else "-" if not np.isfinite([row["high"] - row["low"], other["high"] - other["low"]]).all()
                                     else "equal")
            if np.isfinite(row["measured"]):
                entry["measured"] = f"{row['measured']:.3f}"
            entry["domain"] = _domain(both)
            entry["decoding"], entry["vocabulary"] = row["decoding"], row["vocabulary"]
            table.append(entry)
        lines += [pd.DataFrame(table).to_string(index=False)]
        for _, row in rows[rows["why"].fillna("") != ""].iterrows():
            lines.append(f"  why ({row['model']}, from {row['pregen']}): "
                         f"{row['why']}")
        for note in sorted(set(rows["note"].fillna("")) - {""}):
            lines.append(f"  note: {note}")
        for predictor in (CHOSEN, PERPLEXITY):
            ranked = scores.order[(scores.order["postgen"] == post) & (scores.order["predictor"] == predictor)]
            if len(ranked) < 2:
                continue
            close = scores.pairs[(scores.pairs["postgen"] == post) & (scores.pairs["predictor"] == predictor)
                                 & ~scores.pairs["separable"]]
            lines.append(f"  order by {'the chosen metric' if predictor == CHOSEN else 'perplexity'}: "
                         + " > ".join(ranked["model"]) + "; intervals cannot separate: "
                         + (", ".join(f"{a} ~ {b}" for a, b in zip(close["model_a"], close["model_b"])) or "none"))
        lines.append("")
    lines.append(f"{level} full conformal sets with the metric chosen inside every fit, printed whole (an "
                 "interval, islands joined by 'or', or unbounded with its reason): each covers the real "
                 f"score at least {level} of the time for a model like the search's own (exchangeable with them), "
                 "choice included, on average over such models (marginal: among the rows still printed after "
                 "others are withheld it is not guaranteed); a model beyond the calibration models' domain (domain: FLAGGED, naming the axis "
                 "and how far out, in spans of their range) is no such model: its numbers are not covered by that, "
                 "and it is left out of the order; beyond it on the predictor's own metric, no prediction")
    if not scores.pairs["separable"].all():
        lines.append(f"hint: models whose {level} intervals overlap are not told apart by their predictions; to "
                     "tell them apart, race them on real scores of their captions: pregen-search select --search "
                     "DIR --split test --captions A.jsonl B.jsonl ...")
    return "\n".join(lines)


def _domain(rows: list) -> str:
    """The model's ``domain`` cell from its rows (chosen, then perplexity): ``ok`` only where every number is
    ordinary; ``WITHHELD from ...`` for each predictor beyond the domain on its own metric (no number),
    ``FLAGGED: ...`` for a number of a model beyond the domain on another axis; ``-`` where nothing was placed."""
    parts = [f"WITHHELD from {row['pregen']}" for row in rows if row["status"] == "withheld"]
    flags = [row["flag"] for row in rows if row["flag"]]
    if flags:
        parts.append(f"FLAGGED: {flags[0]}")
    if parts:
        return "; ".join(parts)
    return "ok" if any(row["status"] in ("predicted", "unbounded") for row in rows) else "-"


def _interval(row) -> str:
    """``0.472 [0.401, 0.533]``; islands ``0.472 [0.401, 0.433] or [0.45, 0.533]``; unbounded ``0.472 [0.401, inf)``
    (its reason in a ``why`` line); ``none: 0.12 above [0.31, 0.45] (0.9x its span)`` beyond the calibration
    models' domain on the predictor's own metric; ``none`` where there is no number (its ``why`` line says why)."""
    if row["status"] == "withheld":
        span = row["calibration_max"] - row["calibration_min"]
        return (f"none: {row['distance']:.3g} {row['side']} [{row['calibration_min']:.4g}, {row['calibration_max']:.4g}]"
                f" ({row['distance'] / span:.1f}x its span)")
    if row["status"] == "none":
        return "none"
    return f"{row['predicted']:.3f} {row['set']}"


COMMAND = Command("predict", "new models' post-gen scores predicted from their reference probabilities, with "
                             "intervals, their order, and the pairs the intervals cannot separate "
                             "(formerly `score`, which works for this version)",
                  _arguments, _run, aliases=("score",))
