"""One verdict per answer of a selection, and the rules every part of the answer keeps with it (issue 57).

A selection answers one of four ways, and its first line says which, in these words (``VERDICTS``):

- ``exact on these images``: every model was scored on every image (no race, or a race that ran to
  the whole split): the pick is the best on these images, exactly; the others are ``below the pick
  on these images`` or ``tied with the pick on these images``; ``within`` is 0; no interval is
  needed, and whether the pick would also win on new images is a paired test's question
  (``evaluate``'s max-T family, beside it).
- ``separated``: a race dropped every other model: each was shown worse than the pick at the
  race's confidence (``dropped in round k``); ``within`` is 0.
- ``within EPS``: a race stopped because the pick was shown at most EPS below the best of the
  models raced (``--within``), before every model was scored on every image; the models left are
  ``not separated``; 0 < ``within`` <= EPS or ``within`` is 0 with models left.
- ``not separated``: a race spent its budget with models left beside the pick (``not separated``):
  it names the model with the highest estimate and how far below the best it may be (``within``).

The two statements of a race answer two questions: the drops say which models are shown worse than
the best, ``within`` how far the pick may be below the best; for two models they come from one
sequence (``drops``), for more from one procedure at alpha together. ``agreement_errors`` checks a
whole answer (its lines, select.tsv's rows, the ``RaceResult``) against these rules.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .racing import STATUS_LEFT, STATUS_PICKED, STATUS_SCREENED, RaceResult, exact_status, prior_order

EXACT = "exact on these images"
SEPARATED = "separated"
WITHIN = "within"
NOT_SEPARATED = "not separated"
VERDICTS = (EXACT, SEPARATED, WITHIN, NOT_SEPARATED)
MAX_LINES = 6  # stdout of a default answer; the rest goes to the files and --verbose
# what no line of each verdict's answer may say
FORBIDDEN = {EXACT: ("stopped early", "estimated", "not separated", "could not be told apart"),
             SEPARATED: ("not separated", "exactly", "stopped early", "could not be told apart"),
             WITHIN: ("exactly", "every other model was dropped"),
             NOT_SEPARATED: ("exactly", "stopped early", "every other model was dropped")}


def verdict(race: RaceResult) -> str:
    """Which of ``VERDICTS`` ``race`` answers."""
    if race.exact:
        return EXACT
    if not race.not_separated:
        return SEPARATED
    return WITHIN if race.stopped_by_within else NOT_SEPARATED


def exact_result(matrix: np.ndarray, prior=None, names=None, raced=None) -> RaceResult:
    """The answer without a race: every model of ``raced`` (default all) scored on every image of
    ``matrix: f64[M, I]`` (NaN rows for the others, ``screened out``). The pick is the highest mean
    (ties: the prior, lower first, then the order)."""
    matrix = np.asarray(matrix, np.float64)
    models, images = matrix.shape
    names = list(names) if names is not None else [str(c) for c in range(models)]
    prior = np.zeros(models) if prior is None else np.asarray(prior, np.float64)
    order = prior_order(prior)
    rank = np.empty(models, int)
    rank[order] = np.arange(1, models + 1)
    raced = list(range(models)) if raced is None else [int(c) for c in raced]
    means = np.full(models, math.nan)
    means[raced] = matrix[raced].mean(1)
    picked = min(raced, key=lambda c: (-means[c], rank[c]))
    status = [STATUS_SCREENED if c not in raced else STATUS_PICKED if c == picked else
              exact_status(means[c], means[picked]) for c in range(models)]
    scored = np.where(np.isin(np.arange(models), raced), images, 0)
    table = pd.DataFrame({
        "candidate": names, "prior_rank": rank, "rounds": (scored > 0).astype(int), "images_scored": scored,
        "estimate": means, "low": means, "high": means, "status": status,
        "picked": [c == picked for c in range(models)],
        "within": [0.0 if c == picked else math.nan for c in range(models)]})
    spent = int(scored.sum())
    return RaceResult(table, picked, [], spent, spent / (models * images), [images], math.nan,
                      {"screened": models - len(raced)}, within=0.0, within_history=[0.0], exact=True)


def agreement_errors(race: RaceResult, table: pd.DataFrame | None = None, lines=(), within_asked=None,
                     verbose: bool = False) -> list[str]:
    """Every way an answer breaks the rules of one verdict (the module docstring): ``race`` the
    ``RaceResult``, ``table`` select.tsv's rows (one per model, ``status``, ``picked``, ``within``),
    ``lines`` what was printed (the first says the verdict and, left beside the pick, "at most W" with the
    race's W to 4 places), ``within_asked`` the --within EPS asked
    for; ``verbose``: the lines are the full answer (else at most ``MAX_LINES``). [] when all agree."""
    said = verdict(race)
    errors = []
    status = list((race.table if table is None else table)["status"])
    picked = [k for k, s in enumerate(status) if s == STATUS_PICKED]
    if picked != [race.picked]:
        errors.append(f"status 'picked' on rows {picked}, the pick is {race.picked}")
    others = [k for k, s in enumerate(status) if s not in (STATUS_PICKED, STATUS_SCREENED)]
    left = [k for k in others if status[k] == STATUS_LEFT]
    if sorted(left) != sorted(race.not_separated):
        errors.append(f"rows {left} say '{STATUS_LEFT}', the race left {race.not_separated}")
    expected = {EXACT: lambda s: s.startswith(("below the pick", "tied with the pick")),
                SEPARATED: lambda s: s.startswith("dropped in round"),
                WITHIN: lambda s: s == STATUS_LEFT or s.startswith("dropped in round"),
                NOT_SEPARATED: lambda s: s == STATUS_LEFT or s.startswith("dropped in round")}[said]
    errors += [f"row {k}: status '{status[k]}' under the verdict '{said}'" for k in others if not expected(status[k])]
    if said in (EXACT, SEPARATED) and race.within != 0:
        errors.append(f"verdict '{said}' with within {race.within}")
    if said in (WITHIN, NOT_SEPARATED) and not race.not_separated:
        errors.append(f"verdict '{said}' with no model left beside the pick")
    if said == WITHIN and (within_asked is None or not race.within <= within_asked):
        errors.append(f"verdict '{WITHIN}' with within {race.within}, asked {within_asked}")
    if said == NOT_SEPARATED and within_asked is not None and race.within <= within_asked and race.stopped_by_within:
        errors.append("stopped by --within but the verdict is 'not separated'")
    if table is not None and "within" in table:
        row = float(table["within"].iloc[race.picked])
        if not math.isclose(row, race.within, rel_tol=1e-9, abs_tol=1e-12) and not (math.isinf(row) and
                                                                                   math.isinf(race.within)):
            errors.append(f"select.tsv's within {row} against the race's {race.within}")
    lines = list(lines)
    if lines:
        first = lines[0]
        if not first.startswith(said):
            errors.append(f"first line does not open with '{said}': {first[:80]!r}")
        if said in (WITHIN, NOT_SEPARATED) and f"at most {race.within:.4f} " not in first:
            errors.append(f"first line does not give the race's within {race.within:.4f}: {first[:80]!r}")
        for number, line in enumerate(lines):
            errors += [f"line {number + 1} says '{phrase}' under '{said}'" for phrase in FORBIDDEN[said]
                       if phrase in line]
            if number and any(line.startswith(v) for v in VERDICTS if v != WITHIN):
                errors.append(f"line {number + 1} opens with a verdict: {line[:60]!r}")
        if not verbose and len(lines) > MAX_LINES:
            errors.append(f"{len(lines)} lines printed, at most {MAX_LINES}")
    return errors
