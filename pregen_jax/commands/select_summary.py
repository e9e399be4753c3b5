"""What ``pregen-search select`` prints: the pick in the user's terms (the confidence asked for and
what its intervals are, the models it could not separate and what to try to separate them, what the run cost in
images and in seconds, and why the pick's estimate is optimistic)."""
from __future__ import annotations

import math


def summary_lines(table, selection, seconds: float, where: str | None = None) -> list[str]:
    """The lines of the answer (``table``: select.tsv; ``selection``: the ``Selection``;
    ``seconds``: the whole run's, from the command's start; ``where``: the images raced, e.g.
    "val images of the search"). The first line says whether the race separated anything before
    it names a model: a race that dropped nothing has no pick to boast of, only a highest estimate
    and how far below the best it may be (``within``)."""
    from ..pipeline.config import model_label
    race, settings = selection.race, selection.settings
    name = lambda row: model_label(row["architecture"], row["run"], row["epoch"])  # noqa: E731
    pick = table.iloc[race.picked]
    scored, split_size = int(pick["images_scored"]), _split_size(race)
    where = where or f"{settings.split} images"
    whole = pick["whole_split_score"] if "whole_split_score" in pick else math.nan
    metric, level = selection.metric, f"{100 * settings.confidence:g}%"
    models = raced(race)
    left = [name(table.iloc[c]) for c in race.not_separated]
    estimate = (f"{metric} {pick['estimate']:.4f} [{pick['low']:.4f}, {pick['high']:.4f}] estimated for all "
                f"{split_size} {where} from a subset of {scored}")
    if scored >= split_size:  # every image scored: the answer is exact on these images
        lines = [f"picked {name(pick)}: {metric} {pick['estimate']:.4f} on all {split_size} {where} (every image "
                 "scored: the best of these models on these images, exactly; whether it is better on new images is "
                 "a question for `pregen-search evaluate`'s paired test)"]
    elif left and len(left) == models - 1:
        lines = [f"not separated: none of the {models} models could be told apart on {scored} of the {split_size} "
                 f"{where}, and the one with the highest estimate may be up to {race.within:.4f} {metric} below the "
                 f"best; that is {name(pick)}, {estimate}",
                 within_line(race, metric, level)]
    else:
        lines = [f"picked {name(pick)}: {estimate}", within_line(race, metric, level)]
    if scored < split_size:
        lines.append(f"intervals: at {level} confidence for the whole race: {interval_kind(race)}")
    if math.isfinite(whole) and scored < split_size:
        lines.append(f"{name(pick)}'s {metric} on all {split_size} {where}: {whole:.4f} (every image scored after "
                     f"the race; it picked on {scored} of them)")
    if scored < split_size:
        lines.append("not separated from it: " + (", ".join(left) if left else "none (every other model was dropped)"))
        if left:
            lines.append(budget_hint(settings.budget))
    if scored < split_size and not math.isfinite(whole):
        lines.append("note: the estimate is optimistic (the race picks the model whose estimate came out highest, "
                     "so its score on the whole split is likely lower); the interval and `within` hold")
    total = race.images_scored / race.cost if race.cost else 0
    lines.append(f"cost: {race.images_scored} images decoded and scored of {int(round(total))} "
                 f"({100 * race.cost:.1f}% of scoring every model on every image); {seconds:.1f} s the whole run: "
                 f"{selection.seconds['generate']:.1f} s decoding, {selection.seconds['score']:.1f} s scoring"
                 f"{per_image_seconds(selection)}, the rest reading the "
                 + ("caption files and references" if "references" in table else "search's data and models"))
    if race.stopped_by_within:
        lines.append(f"stopped early: the pick was shown within {settings.within:g} {metric} of the best (--within)")
    elif settings.within is not None:
        lines.append(f"--within {settings.within:g}: not reached within the budget (the pick is at most "
                     f"{race.within:.4f} below the best)")
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
        lines.append(f"check against the search's whole-split {metric}: the pick's is "
                     f"{pick['search_score']:.4f}, the best model's {best:.4f} (regret {regret:.2f}%)")
    return lines


def within_line(race, metric: str, level: str) -> str:
    """How far the pick can be below the best of the models raced (``RaceResult.within``)."""
    models = raced(race)
    if race.within <= 0:
        return (f"within: the pick is the best of these {models} at {level} (every other model was dropped; "
                f"P(the best is dropped) <= alpha/2)")
    return (f"within: the pick is at most {race.within:.4f} {metric} below the best of these {models}, at {level} "
            f"(the drops at alpha/2, each of the {models - 1} pairs with the pick at alpha/(2(K-1)))")


def per_image_seconds(selection) -> str:
    """Seconds per image decoded and per image scored, where the race asked for any."""
    scored = selection.race.images_scored
    if not scored:
        return ""
    return (f" ({1000 * selection.seconds['generate'] / scored:.2f} ms decoding and "
            f"{1000 * selection.seconds['score'] / scored:.2f} ms scoring an image)")


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
    simultaneous over the K models raced; the drops' evidence against the leaders at alpha / 2."""
    models = raced(race)
    each = 100 * (1 - 2 * race.alpha_per_test)
    drops = (f"; a model was dropped only where its evidence against the leaders reached 1/{race.alpha_drop:.3g} "
             f"(a test at {100 * (1 - race.alpha_drop):.2f}%: P(the best is dropped) <= alpha/2)") \
        if models > 1 and math.isfinite(race.alpha_drop) else ""
    return (f"each interval is a confidence sequence, valid at every look of the race, at {each:.2f}% (alpha/K for "
            f"the K = {models} models raced), so that all {models} hold together, the pick's included, though it "
            f"was picked as the best{drops})")


def budget_hint(budget: float) -> str:
    """What to try to separate the pick from the models left with it: a larger budget (the drops'
    bets are sized for it), or --within to stop once the pick is close enough to the best."""
    if budget >= 1:
        return ("hint: every image was scored: whole_split_score in select.tsv gives each model's score on the "
                "whole split, to compare directly")
    return ("hint: a larger --budget separates models closer to the best (--budget 1 scores every model on every "
            "image and gives each its whole-split score, whole_split_score in select.tsv); --within EPS stops the "
            "race as soon as the pick is shown at most EPS below the best")
