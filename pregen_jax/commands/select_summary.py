"""What ``pregen-search select`` prints: the pick in the user's terms (the confidence asked for and
what its intervals are, the models it could not separate and what to try to separate them, what the run cost in
images and in seconds, and why the pick's estimate is optimistic)."""
from __future__ import annotations

import math


def summary_lines(table, selection, seconds: float, where: str | None = None) -> list[str]:
    """The lines of the answer (``table``: select.tsv; ``selection``: the ``Selection``;
    ``seconds``: the whole run's, from the command's start; ``where``: the images raced, e.g.
    "val images of the search")."""
    from ..pipeline.config import model_label
    race, settings = selection.race, selection.settings
    name = lambda row: model_label(row["architecture"], row["run"], row["epoch"])  # noqa: E731
    pick = table.iloc[race.picked]
    scored, split_size = int(pick["images_scored"]), _split_size(race)
    where = where or f"{settings.split} images"
    whole = pick["whole_split_score"] if "whole_split_score" in pick else math.nan
    estimate = (f"{selection.metric} {pick['estimate']:.4f} [{pick['low']:.4f}, {pick['high']:.4f}] estimated for all "
                f"{split_size} {where} from a subset of {scored}, at {100 * settings.confidence:g}% confidence for the "
                f"whole race: {interval_kind(race)}")
    if math.isfinite(whole):
        lines = [f"picked {name(pick)}: {selection.metric} {whole:.4f} on all {split_size} {where} (every image "
                 "scored: its whole-split score, no estimate)"
                 + (f"; the race picked it on {scored} of them" if scored < split_size else "")]
    else:
        lines = [f"picked {name(pick)}: {estimate}"]
    left = [name(table.iloc[c]) for c in race.not_separated]
    lines.append("not separated from it: " + (", ".join(left) if left else "none (every other model was dropped)"))
    if left:
        lines.append(budget_hint(settings.budget))
    if scored < split_size and not math.isfinite(whole):
        lines.append(f"note: {scored} images are few: the pick's estimate is optimistic (the race picks the model "
                     "whose estimate came out highest, so its score on the whole split is likely lower)")
    total = race.images_scored / race.cost if race.cost else 0
    lines.append(f"cost: {race.images_scored} images decoded and scored of {int(round(total))} "
                 f"({100 * race.cost:.1f}% of scoring every model on every image); {seconds:.1f} s the whole run: "
                 f"{selection.seconds['generate']:.1f} s decoding, {selection.seconds['score']:.1f} s scoring, "
                 "the rest reading the " + ("caption files and references" if "references" in table
                                            else "search's data and models"))
    import numpy as np  # here: importing the CLI stays free of numpy (evaluate starts METEOR's process first)
    completed = int((~np.isnan(selection.scores)).sum()) - race.images_scored if selection.scores is not None else 0
    if completed > 0:
        lines.append(f"then {completed} more images scored (--budget 1 pays for every model on every image), so that "
                     "every model raced has its whole-split score (whole_split_score in select.tsv)")
    screened = [name(table.iloc[c]) for c in range(len(table)) if table.iloc[c]["status"] == "screened out"]
    if screened:
        lines.append(f"screened out before generation ({len(screened)} of {len(table)}, by the prior): "
                     + ", ".join(screened))
    if "search_score" in table and table["search_score"].notna().all():
        best = table["search_score"].max()
        regret = 100 * (best - pick["search_score"]) / best if best else 0.0
        lines.append(f"check against the search's whole-split {selection.metric}: the pick's is "
                     f"{pick['search_score']:.4f}, the best model's {best:.4f} (regret {regret:.2f}%)")
    return lines


def _split_size(race) -> int:
    """The split's images (the race's last round size is at most that; cost = scored / (M x I))."""
    models = len(race.table)
    return int(round(race.images_scored / race.cost / models)) if race.cost else 0


def raced(race) -> int:
    """K, the models raced (the screened out are not): each interval is at alpha / K
    (``race.alpha_per_test`` is one side of it, alpha / (2 K))."""
    return int((race.table["status"] != "screened out").sum())


def interval_kind(race) -> str:
    """What the printed intervals are (``ranking.racing``): confidence sequences, valid at every look,
    simultaneous over the K models raced; the drops' paired sequences at alpha / (K - 1)."""
    models = raced(race)
    each = 100 * (1 - 2 * race.alpha_per_test)
    drops = (f"; a model was dropped only where its paired differences to the leader were shown below zero at "
             f"{100 * (1 - race.alpha_pair):.2f}% (alpha/(K-1) each)") if models > 1 and math.isfinite(race.alpha_pair) \
        else ""
    return (f"each interval is a confidence sequence, valid at every look of the race, at {each:.2f}% (alpha/K for "
            f"the K = {models} models raced), so that all {models} hold together, the pick's included, though it "
            f"was picked as the best{drops})")


def budget_hint(budget: float) -> str:
    """What to try to separate the pick from the models left with it.

    No smaller budget is promised: the intervals are confidence sequences valid for any per-image
    scores in the metric's range, and they narrow slowly until a good share of the split is scored
    (experiments/model_selection/README.md, finding 10: 4.4-5.3 CIDEr wide after 16 images, and no
    model dropped at budgets up to 25% on the study's grids). Only every image pins each model's
    whole-split score (a sequence without replacement closes on the split's mean when every image
    has been drawn)."""
    if budget >= 1:
        return ("hint: every image was scored: whole_split_score in select.tsv gives each model's score on the "
                "whole split, to compare directly")
    return ("hint: a larger --budget narrows the intervals, but no budget below 1 is sure to separate them (intervals "
            "valid at every look narrow slowly: experiments/model_selection/README.md, finding 10); --budget 1 scores "
            "every model on every image and gives each its whole-split score (whole_split_score in select.tsv)")
