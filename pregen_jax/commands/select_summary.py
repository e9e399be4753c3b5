"""What ``pregen-search select`` prints: one verdict first (``ranking.verdicts``: exact on these
images, separated, within EPS or not separated), then at most two lines that agree with it (the
paired test for new images, or which models were shown worse), then the cost. The rest (what the
intervals are, hints, the optimistic estimate, the screened, the search's check) goes to
``summary.txt`` and ``--verbose``."""
from __future__ import annotations

import math

SHOWN = 3  # models named on a line before "... (select.tsv)"


def summary_lines(table, selection, seconds: float, where: str | None = None, verbose: bool = True) -> list[str]:
    """The lines of the answer (``table``: select.tsv; ``selection``: the ``Selection``; ``seconds``:
    the whole run's, from the command's start; ``where``: the images, e.g. "val images of the
    search"): the verdict, the line that goes with it, the cost; with ``verbose`` the rest."""
    from ..ranking import verdicts
    race, said = selection.race, verdicts.verdict(selection.race)
    where = where or f"{selection.settings.split} images"
    if said == verdicts.EXACT:
        lines = [exact_line(table, selection, where), paired_line(table, selection)]
    else:
        lines = [race_line(table, selection, where, said), drops_line(table, race)]
    lines = [line for line in lines if line] + [cost_line(table, selection, seconds)]
    return lines + (detail_lines(table, selection, said) if verbose else [])


def _name(table, c: int) -> str:
    from ..pipeline.config import model_label
    row = table.iloc[c]
    return model_label(row["architecture"], row["run"], row["epoch"])


def _listed(names: list[str]) -> str:
    return ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more (select.tsv)" if len(names) > SHOWN else "")


def exact_line(table, selection, where: str) -> str:
    """Exact: the pick and its score on every image, and the runner-up's."""
    race, metric = selection.race, selection.metric
    pick = table.iloc[race.picked]
    line = (f"exact on these images: picked {_name(table, race.picked)}, {metric} {pick['estimate']:.4f} on all "
            f"{race.rounds[-1]} {where} (every model scored on every image)")
    others = [c for c in range(len(table)) if c != race.picked and table.iloc[c]["status"] != "screened out"]
    if others:
        second = max(others, key=lambda c: table.iloc[c]["estimate"])
        line += f"; next {_name(table, second)} {table.iloc[second]['estimate']:.4f}"
    return line


def paired_line(table, selection) -> str:
    """Whether the pick would also win on new images: evaluate's paired test (``selection.exact``)."""
    paired = selection.paired
    if paired is None:
        return ""
    compared = [c for c in paired.index if not math.isnan(paired.loc[c, "diff"])]
    better = [_name(table, c) for c in compared if paired.loc[c, "better"]]
    unsure = [c for c in compared if not paired.loc[c, "better"]]
    line = (f"on new images (evaluate's paired bootstrap, max-T over the {len(compared)} comparisons, 95%): "
            f"better than {len(better)} of {len(compared)}")
    if unsure:
        # the pick minus each model (select.tsv's diff is the model minus the pick): a positive lead
        # beside the pick, not a minus sign that reads as the pick being behind
        line += "; not shown better than (the pick's lead) " + _listed([
            f"{_name(table, c)} ({-paired.loc[c, 'diff']:+.4f} [{-paired.loc[c, 'diff_high']:+.4f}, "
            f"{-paired.loc[c, 'diff_low']:+.4f}])" for c in unsure])
    return line


def race_line(table, selection, where: str, said: str) -> str:
    """A race's verdict: the pick, its estimate from a subset, and how far below the best it may be."""
    race, metric, level = selection.race, selection.metric, f"{100 * selection.settings.confidence:g}%"
    pick, models = table.iloc[race.picked], raced(race)
    estimate = (f"{metric} {pick['estimate']:.4f} [{pick['low']:.4f}, {pick['high']:.4f}] estimated from "
                f"{int(pick['images_scored'])} of the {_split_size(race)} {where}")
    if int(pick["images_scored"]) == _split_size(race):  # the race drew the whole split: the pick's score is exact
        estimate = f"{metric} {pick['estimate']:.4f} on all {_split_size(race)} {where} (its score exact on these images)"
    name = _name(table, race.picked)
    if said == "separated":
        return f"separated: picked {name}, every other of the {models} models shown worse at {level}; {estimate}"
    distance = f"at most {race.within:.4f} {metric} below the best of the {models} at {level}"
    if said == "within":
        return f"within {selection.settings.within:g}: picked {name}, shown {distance}; {estimate}"
    return f"not separated: {name} has the highest estimate and is {distance}; {estimate}"


def drops_line(table, race) -> str:
    """Which models were shown worse than the best (the drops), and which were not: the other question."""
    dropped = [f"{_name(table, c)} (round {table.iloc[c]['status'].rsplit(' ', 1)[-1]})"
               for c in range(len(table)) if str(table.iloc[c]["status"]).startswith("dropped")]
    line = "shown worse than the best (dropped): " + (_listed(dropped) if dropped else "none")
    if race.not_separated:
        line += "; not shown worse: " + _listed([_name(table, c) for c in race.not_separated])
    return line


def cost_line(table, selection, seconds: float) -> str:
    """What it cost, and, for a race, what scoring every model on every image would have."""
    race = selection.race
    total = int(round(race.images_scored / race.cost)) if race.cost else 0
    each = (selection.seconds["generate"] + selection.seconds["score"]) / max(race.images_scored, 1)
    line = (f"cost: {race.images_scored} of {total} model-images scored ({100 * race.cost:.1f}%), {seconds:.1f} s "
            f"the whole run ({1000 * each:.2f} ms an image decoding and scoring)")
    if not race.exact:
        line += f"; every model on every image: about {total * each:.1f} s, and exact"
    return line


def detail_lines(table, selection, said: str) -> list[str]:
    """The rest of the answer (``summary.txt``, ``--verbose``)."""
    race, settings, metric = selection.race, selection.settings, selection.metric
    level = f"{100 * settings.confidence:g}%"
    lines = [f"seconds: {selection.seconds['generate']:.1f} decoding, {selection.seconds['score']:.1f} scoring"]
    if said != "exact on these images":
        lines += [within_line(race, metric, level), f"intervals: at {level} for the whole race: {interval_kind(race)}",
                  "note: the estimate is optimistic (the race picks the model whose estimate came out highest); "
                  "the interval and the within bound hold"]
        if race.not_separated:
            lines.append(budget_hint(settings.budget))
    screened = [_name(table, c) for c in range(len(table)) if table.iloc[c]["status"] == "screened out"]
    if screened:
        lines.append(f"screened out before generation ({len(screened)} of {len(table)}, by the prior): "
                     + ", ".join(screened))
    if "search_score" in table and table["search_score"].notna().all():
        best = table["search_score"].max()
        pick = table.iloc[race.picked]
        regret = 100 * (best - pick["search_score"]) / best if best else 0.0
        lines.append(f"check against the search's whole-split {metric}: the pick's is "
                     f"{pick['search_score']:.4f}, the best model's {best:.4f} (regret {regret:.2f}%)")
    return lines


def within_line(race, metric: str, level: str) -> str:
    """How far the pick can be below the best of the models raced (``RaceResult.within``), and at what levels."""
    models = raced(race)
    how = ("one sequence for each order of the pair, at alpha, serves the drops and this bound" if models == 2 else
           f"the drops at alpha/2, each of the {models - 1} pairs with the pick at alpha/(2(K-1))")
    if race.within <= 0:
        return f"within: the pick is the best of these {models} at {level} ({how})"
    return f"within: the pick is at most {race.within:.4f} {metric} below the best of these {models}, at {level} ({how})"


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
    simultaneous over the K models raced; and the level of the drops."""
    models = raced(race)
    each = 100 * (1 - 2 * race.alpha_per_test)
    drops = ""
    if models == 2 and math.isfinite(race.alpha_drop):
        drops = (f"; a model was dropped only where its pair's one-sided sequence at {100 * (1 - race.alpha_drop):.2f}% "
                 "put it below the other (P(the best is dropped or farther than within) <= alpha)")
    elif models > 2 and math.isfinite(race.alpha_drop):
        drops = (f"; a model was dropped only where its evidence against the leaders reached 1/{race.alpha_drop:.3g} "
                 f"(a test at {100 * (1 - race.alpha_drop):.2f}%: P(the best is dropped) <= alpha/2)")
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
            "image: the answer on these images, with evaluate's paired test for new ones); --within EPS stops the "
            "race as soon as the pick is shown at most EPS below the best")
