"""``pregen-search select``: the best of a finished search's models, chosen by racing them on real
post-gen scores."""
from __future__ import annotations

import argparse

from .base import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--search", required=True, help="a finished search's run folder (its models race)")
    parser.add_argument("--checkpoints", nargs="*", default=[], metavar="MSGPACK",
                        help="more saved models of this package to race beside the search's")
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
    from pathlib import Path

    from .. import io
    from ..pipeline.finished import FinishedSearch
    from ..ranking.racing import RaceSettings
    from ..selection import check_metric, run_select
    check_metric(args.metric)
    try:
        settings = RaceSettings(args.budget, args.confidence, args.seed)
    except ValueError as err:
        raise ValueError(f"--{err}") from None
    for path in args.checkpoints:
        if not Path(path).is_file():
            raise ValueError(f"--checkpoints: {path}: file not found")
    out = io.check_out_folder(args.out)
    run = FinishedSearch.open(args.search)
    if args.screen and not 0 < args.screen_keep <= 1:
        raise ValueError(f"--screen-keep {args.screen_keep}: expected a share in (0, 1]")
    table, selection, notes = run_select(run, args.split, args.metric, settings, args.checkpoints,
                                         progress=not args.no_progress, assist=args.assist,
                                         screen=args.screen_keep if args.screen else None)
    for note in notes:
        print(note)
    with io.staged_folder(out) as staging:
        io.write_tsv(table, staging / "select.tsv")
    print("\n".join(_summary_lines(table, selection, args.split)))
    print(f"wrote {out}/select.tsv")
    return 0


def _summary_lines(table, selection, split: str) -> list[str]:
    """What select prints: the pick, its interval, the models it could not separate, the cost."""
    race = selection.race
    pick = table.iloc[race.picked]
    from ..pipeline.config import model_label
    name = lambda row: model_label(row["architecture"], row["run"], row["epoch"])  # noqa: E731
    total = race.images_scored / race.cost if race.cost else 0
    lines = [f"picked {name(pick)}: {selection.metric} {pick['estimate']:.4f} "
             f"[{pick['low']:.4f}, {pick['high']:.4f}] on {int(pick['images_scored'])} {split} images "
             f"(interval at level {1 - 2 * race.alpha_per_test:.4f}, the race's corrected level)"]
    left = [name(table.iloc[c]) for c in race.not_separated]
    lines.append("not separated from it: " + (", ".join(left) if left else "none (every other model was dropped)"))
    lines.append(f"cost: {race.images_scored} images decoded and scored of {int(round(total))} "
                 f"({100 * race.cost:.1f}% of scoring every model on every image), "
                 f"{selection.seconds['generate']:.1f} s decoding, {selection.seconds['score']:.1f} s scoring, "
                 f"{selection.seconds.get('pass', 0.0):.1f} s teacher-forced passes (assist {selection.assist})")
    screened = [name(table.iloc[c]) for c in range(len(table)) if table.iloc[c]["status"] == "screened out"]
    if screened:
        lines.append(f"screened out before generation ({len(screened)} of {len(table)}, by the prior): "
                     + ", ".join(screened))
    if race.assist.get("r2_pairs") is not None and "variance_ratio_pairs" in race.assist:
        lines.append(f"assist {selection.assist}: cross-fitted R^2 {race.assist['r2_single']:.3f} (scores), "
                     f"{race.assist['r2_pairs']:.3f} (differences to the pick); variance ratio of those differences "
                     f"(plain over assisted, median) {race.assist['variance_ratio_pairs']:.3f}")
    if "search_score" in table and table["search_score"].notna().all():
        best = table["search_score"].max()
        regret = 100 * (best - pick["search_score"]) / best if best else 0.0
        lines.append(f"check against the search's whole-split {selection.metric}: the pick's is "
                     f"{pick['search_score']:.4f}, the best model's {best:.4f} (regret {regret:.2f}%)")
    return lines


COMMAND = Command("select", "choose the best of a search's models by racing: real post-gen scores on growing "
                            "random subsets, dropping models shown worse", _arguments, _run)
