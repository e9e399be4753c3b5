"""What ``pregen-search select`` prints: the pick in the user's terms (the confidence asked for,
the models it could not separate and the budget likely to separate them, what the run cost in
images and in seconds, and why the pick's estimate is optimistic)."""
from __future__ import annotations

import math

import numpy as np


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
                f"whole race (each interval at {100 * (1 - 2 * race.alpha_per_test):.2f}%, corrected for the race's "
                "repeated looks)")
    if math.isfinite(whole):
        lines = [f"picked {name(pick)}: {selection.metric} {whole:.4f} on all {split_size} {where} (every image "
                 "scored: its whole-split score, no estimate)"
                 + (f"; the race picked it on {scored} of them" if scored < split_size else "")]
    else:
        lines = [f"picked {name(pick)}: {estimate}"]
    left = [name(table.iloc[c]) for c in race.not_separated]
    lines.append("not separated from it: " + (", ".join(left) if left else "none (every other model was dropped)"))
    if left:
        lines.append(budget_hint(table, race, settings.budget))
    if scored < split_size and not math.isfinite(whole):
        lines.append(f"note: {scored} images are few: the pick's estimate is optimistic (the race picks the model "
                     "whose estimate came out highest, so its score on the whole split is likely lower)")
    total = race.images_scored / race.cost if race.cost else 0
    lines.append(f"cost: {race.images_scored} images decoded and scored of {int(round(total))} "
                 f"({100 * race.cost:.1f}% of scoring every model on every image); {seconds:.1f} s the whole run: "
                 f"{selection.seconds['generate']:.1f} s decoding, {selection.seconds['score']:.1f} s scoring, "
                 f"{selection.seconds.get('pass', 0.0):.1f} s teacher-forced passes (assist {settings.assist}), "
                 "the rest reading the " + ("caption files and references" if "references" in table
                                            else "search's data and models"))
    completed = int((~np.isnan(selection.scores)).sum()) - race.images_scored if selection.scores is not None else 0
    if completed > 0:
        lines.append(f"then {completed} more images scored (--budget 1 pays for every model on every image), so that "
                     "every model raced has its whole-split score (whole_split_score in select.tsv)")
    screened = [name(table.iloc[c]) for c in range(len(table)) if table.iloc[c]["status"] == "screened out"]
    if screened:
        lines.append(f"screened out before generation ({len(screened)} of {len(table)}, by the prior): "
                     + ", ".join(screened))
    if race.assist.get("r2_pairs") is not None and "variance_ratio_pairs" in race.assist:
        lines.append(f"assist {settings.assist}: cross-fitted R^2 {race.assist['r2_single']:.3f} (scores), "
                     f"{race.assist['r2_pairs']:.3f} (differences to the pick); variance ratio of those differences "
                     f"(plain over assisted, median) {race.assist['variance_ratio_pairs']:.3f}")
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


def budget_hint(table, race, budget: float) -> str:
    """The --budget that would likely separate the pick from the models left with it.

    An interval's half-width shrinks as 1/sqrt(images): separating the pick from a model whose
    estimate is d below it needs the pair's half-width (taken as sqrt(h_pick^2 + h_model^2), the
    unpaired bound, so a little generous) below d, that is about (half-width / d)^2 times the
    images, and the budget with them."""
    pick = table.iloc[race.picked]
    h_pick = (pick["high"] - pick["low"]) / 2
    factors = []
    for c in race.not_separated:
        row = table.iloc[c]
        gap = pick["estimate"] - row["estimate"]
        width = math.hypot(h_pick, (row["high"] - row["low"]) / 2)
        factors.append((width / gap) ** 2 if gap > 0 and math.isfinite(width) else math.inf)
    needed = budget * max(factors)
    if needed >= 1:
        return ("hint: even every image (--budget 1) would likely not separate them: their scores differ by less "
                "than a race on this split can resolve (they may be as good as the pick)")
    return (f"hint: --budget {min(1.0, _round_up(needed)):g} (about {max(factors):.1f}x the images) would likely "
            "separate them, if their estimated differences hold")


def _round_up(x: float) -> float:
    """``x`` rounded up to two significant digits (a budget to type)."""
    digits = 1 - int(math.floor(math.log10(x)))
    return math.ceil(x * 10 ** digits) / 10 ** digits
