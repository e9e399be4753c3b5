"""Choose the best of N models by racing: real scoring spent only where it separates them.

Every round, every candidate still in the race is scored on the same new random images of
the split; a candidate leaves when the paired per-image differences to the leader say, at the
stated confidence, that it is worse. The race ends when one candidate remains or the budget
(a share of models x images) is spent; the pick is the best mean among those left.

Statistics: confidence sequences, valid at every look (``ranking.confseq``). The images are
drawn without replacement, in a random order, from a finite split whose mean score is the
target; a race looks after every round and stops when it likes, so every bound it uses holds at
every look at once, whatever the (bounded) per-image scores look like: the without-replacement
betting sequences of Waudby-Smith and Ramdas, on scores rescaled from the metric's range
(``score_range``: [0, 10] for CIDEr-D per image, [0, 1] for ROUGE-L, WMD and SPICE) to [0, 1].
With K candidates raced and alpha = 1 - confidence:

- drops (issue 48), K > 2: every candidate c keeps one capital process against whoever leads, bet
  draw by draw on the leader of the previous look beating c on the next image, and leaves when
  it reaches 1 / (alpha / 2) (``drops``: why the best then stays with probability at least
  1 - alpha / 2 with no split over the K - 1 pairs, and why the process must run forward only);
- drops and ``within`` for K = 2 (issue 57): one statement. U_jk, the upper bound of a one-sided
  sequence for mu_j - mu_k at alpha, is kept for both orders of the pair; j is dropped when U_jk < 0,
  and ``within`` is max(0, U_jp) for the other j and the pick p. Only the sequence of the best b
  against the other o can make either wrong (dropping b needs U_bo < 0 <= mu_b - mu_o; a pick o
  farther than ``within`` below b needs mu_b - mu_o > U_bo), so both hold at 1 - alpha together,
  with no alpha / 2 each (``drops``);
- intervals: each candidate's ``low``/``high`` is a two-sided sequence for its split mean at
  alpha / K, from the first look on, intersected over the looks: all K intervals hold together,
  at every round, with probability at least 1 - alpha, so the printed interval covers whichever
  candidate is picked, despite the picking (the pick's estimate, its mean on its images, is
  still optimistic: the interval, not the estimate, is what holds).

- within: after every round, how far below the best of the K the pick can be (``drops``): the
  largest upper bound of mu_j - mu_pick over the survivors j, each pair's sequence at
  alpha / (2 (K - 1)); with the drops, it holds at 1 - alpha at every look, so ``within`` in the
  settings may stop the race.

The sequences' bets are sized for the race (``_tuning``): for the images each survivor is planned
to get (fixed before each round's draws, so they stay predictable), staking up to
``RACE_TRUNCATION`` of the capital (0.99 since issue 57: any c < 1 is valid; 0.9 before), with a
prior standard deviation of a tenth of the range. The budget a doubling schedule leaves is spent on a
last, smaller round (the largest power of two the survivors can still afford). The
range is the caller's: for CIDEr-D ``selection.race.score_range`` gives the highest score any caption
can get on the split's images (from their references), often a third below 10.

History: issue 41 replaced a t bound with Bonferroni over rounds and candidates (nominal 90%
intervals covered 0.83-0.89 at 30-60 images) by confidence sequences with drops on paired
sequences at alpha / (K - 1) and the paper's default bets on [0, 10]: valid, but no checkpoint
was dropped at budgets up to 25%. Issue 48 replaced those drops by the leader's capital process
and tuned the bets; experiments/model_selection/README.md (issue 48) and its HISTORY.md (issue 41)
have both, measured on the same races.

Assisted races (prediction-powered estimates from one teacher-forced pass; their estimator and features now live in
experiments/model_selection/ppi.py and cheap_features.py)
were dropped with it: their predictor is cross-fitted on the images drawn so far, so their
estimates are not sums of predictable increments, and no confidence sequence for them is
implemented; the study found them to change a race's variance by 0.93-1.05 anyway.
``RaceSettings(assist=...)`` other than "none", and ``race(..., features=...)``, are refused.

Screening (``screen``). Candidates whose prior (the teacher-forced criterion) ranks them below
``screen`` are never scored: status ``screened out``. The budget stays a share of all candidates
x images, so the candidates left get more images each.

Round sizes come from a few fixed buckets (powers of two: the images scored so far double each
round), so code compiled for one batch shape is reused. Only ``score_images`` costs anything:
the race never looks at scores it did not ask for.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import pydantic
from pydantic import Field

from ..settings import Seed, settings
from . import confseq, drops

MIN_ROUND = 16  # images in the first round, at least
RACE_TRUNCATION = 0.99  # c of a race's sequences (confseq.Tuning): any c < 1 is valid, a larger one bets harder
CIDER_D_RANGE = (0.0, 10.0)  # per-image CIDEr-D (pycocoevalcap: ten times a mean of clipped cosines)
STATUS_PICKED = "picked"
STATUS_LEFT = "not separated"  # still in the race when it ended, not the pick
STATUS_SCREENED = "screened out"  # ranked below the screen by the prior: never scored
STATUS_BELOW = "below the pick on these images"  # exact: every image scored, its mean lower than the pick's
STATUS_TIED = "tied with the pick on these images"  # exact: the same mean; the prior, then the order, chose
ASSIST_DROPPED = ("assisted races were dropped (issue 41): their prediction-powered estimates are cross-fitted "
                  "on the images drawn so far, and have no confidence sequence valid at every look; race "
                  "without an assist")


Share = Annotated[float, Field(gt=0, le=1)]


@settings
class RaceSettings:
    """How a race spends its budget, validated once, when made (a ``ValueError`` naming the field).

    budget: share of (candidates x images) that may be scored, in (0, 1].
    confidence: 1 - alpha for the whole race (drops and intervals each hold at it, at every
      look), in [0.5, 1).
    seed: the random order in which the split's images are drawn.
    assist: "none" only, kept so that old settings still validate (any other value is refused with
      ``ASSIST_DROPPED``: assisted races were dropped).
    screen: race only this share of the candidates, those the prior ranks best (None: all).
    split: the split whose images a race of a search's models scores ("val" selects; "test"
      checks a pick against the search's whole-split scores).
    within: stop once the pick is shown at most this far below the best of the candidates raced
      (``RaceResult.within``; None: race until one is left or the budget is spent).
    """

    budget: Share = 0.1
    confidence: Annotated[float, Field(ge=0.5, lt=1)] = 0.95
    seed: Seed = 0
    assist: str = "none"
    screen: Share | None = None
    split: Literal["val", "test"] = "val"
    within: Annotated[float, Field(ge=0)] | None = None

    @pydantic.field_validator("assist")
    @classmethod
    def _no_assist(cls, value: str) -> str:
        if value != "none":
            raise ValueError(ASSIST_DROPPED)
        return value


@dataclasses.dataclass
class RaceResult:
    """What a race found.

    table: one row per candidate in the order given, columns ``candidate``, ``prior_rank``,
      ``rounds`` (rounds it was scored in), ``images_scored``, ``estimate`` (its mean score on
      its images), ``low``/``high`` (its confidence sequence after its last round, intersected
      over its rounds), ``status`` (``picked``, ``dropped in round k``, ``not separated``,
      ``screened out``), ``picked``, ``within`` (the pick's row: ``within``; NaN on the others).
    picked: index of the chosen candidate.
    not_separated: indices still in the race at the end besides the pick.
    images_scored: image scorings spent in all; ``cost`` is that over candidates x images.
    rounds: round sizes (cumulative images) actually run.
    alpha_per_test: one side of each candidate's interval (alpha / (2 K)).
    assist: ``screened`` (how many were screened out).
    alpha_drop: the level of the drop rule (K > 2: alpha / 2, P(the best is dropped) <= alpha / 2; K = 2:
      alpha, one sequence per order of the pair serving the drops and W together).
    intervals: f64[rounds, candidates, 2]: every candidate's (low, high) after each round (a
      dropped one keeps its last; NaN before it is scored and for the screened out).
    within: W after the last round: the pick is at most W below the best of the K raced, at
      1 - alpha together with the drops (``drops``); 0 when every other candidate was dropped.
    within_history: W after each round.
    alpha_within: the level of each pair's one-sided sequence in W (K > 2: alpha / (2 (K - 1)); K = 2: alpha).
    stopped_by_within: the race ended because W reached ``RaceSettings.within`` before every
      survivor was scored on every image (a race that scored them all is exact, not stopped early).
    evidence_history: f64[rounds, candidates]: log E_c after each round (K > 2: the drops' capital
      against the leaders; 0 for K = 2, whose drops read ``pair_bounds``); leaders: the candidate
      each round's factors were bet on (the leader after the round before).
    exact: every candidate was scored on every image, without a race (``exact``): the pick is the
      best on these images and no interval is needed.
    pair_bounds: (j, k) -> U_jk, the upper bound of mu_j - mu_k the race holds (intersected).
    """

    table: pd.DataFrame
    picked: int
    not_separated: list[int]
    images_scored: int
    cost: float
    rounds: list[int]
    alpha_per_test: float
    assist: dict = dataclasses.field(default_factory=dict)
    alpha_drop: float = math.nan
    intervals: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0, 2)))
    within: float = math.inf
    within_history: list[float] = dataclasses.field(default_factory=list)
    alpha_within: float = math.nan
    stopped_by_within: bool = False
    evidence_history: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    leaders: list[int] = dataclasses.field(default_factory=list)
    exact: bool = False
    pair_bounds: dict = dataclasses.field(default_factory=dict)


def round_sizes(num_images: int, num_candidates: int, budget: float) -> list[int]:
    """Cumulative images per round: powers of two from the first bucket, doubling, then the
    whole split; cut where even a single survivor could not afford the next round.

    The first bucket is the largest power of two that lets every candidate take at least three
    looks within the budget if none is dropped (but at least ``MIN_ROUND``).
    """
    per_candidate = budget * num_images  # what each candidate can have if none is ever dropped
    first = MIN_ROUND
    while first * 2 * 4 <= per_candidate:  # first, 2 first, 4 first fit: three looks
        first *= 2
    first = max(2, min(first, math.floor(per_candidate), num_images))
    sizes = [first]
    total_budget = budget * num_images * num_candidates
    while sizes[-1] < num_images:
        nxt = min(sizes[-1] * 2, num_images)
        # the cheapest way to reach nxt: one survivor beside the leader (two candidates)
        if first * num_candidates + 2 * (nxt - first) > total_budget + 1e-9:
            break
        sizes.append(nxt)
    return sizes


def round_images(size: int, done: int, alive: int, budget_left: float) -> int | None:
    """New images a model of the next round scores: the schedule's ``size - done``, or in the last round the
    largest bucket (a power of two) the budget still pays for ``alive`` models; None when that is under 2."""
    new = size - done
    if new * alive > budget_left + 1e-9:
        affordable = int((budget_left + 1e-9) // alive)
        if affordable < 2:
            return None
        new = 1 << (affordable.bit_length() - 1)
    return new


def race(score_images: Callable[[int, np.ndarray], np.ndarray], num_candidates: int, num_images: int,
         settings: RaceSettings = RaceSettings(), prior: Sequence[float] | None = None,
         names: Sequence[str] | None = None, features: np.ndarray | None = None,
         screen: int | None = None, score_range: tuple[float, float] = CIDER_D_RANGE) -> RaceResult:
    """Race ``num_candidates`` on a split of ``num_images`` images.

    score_images(c, images: i64[n]) -> f64[n]: candidate c's per-image scores (higher is
      better, inside ``score_range``) on those images; the only costly call, made once per
      candidate and round on the round's new images.
    prior: a teacher-forced criterion per candidate, lower is better (e.g. validation
      perplexity): the order candidates are scored in, the tie-break between equal means,
      and reported as ``prior_rank``.
    features: refused (``ASSIST_DROPPED``); kept so that a caller passing it hears why.
    screen: race only the ``screen`` candidates the prior ranks best (None: the share
      ``settings.screen`` says, or all).
    score_range: (lowest, highest) per-image score the metric can give (its registry entry's
      ``score_range``): the confidence sequences' bounds; a score outside it is an error.
    """
    if features is not None:
        raise ValueError(ASSIST_DROPPED)
    if num_candidates < 1:
        raise ValueError("no candidates to race")
    if num_images < 2:
        raise ValueError(f"{num_images} images: a race needs at least 2")
    low_score, high_score = (float(v) for v in score_range)
    if not (math.isfinite(low_score) and math.isfinite(high_score) and low_score < high_score):
        raise ValueError(f"score range {score_range}: a race needs a finite range (lowest < highest)")
    names = list(names) if names is not None else [str(c) for c in range(num_candidates)]
    prior = np.zeros(num_candidates) if prior is None else np.asarray(prior, np.float64)
    if prior.shape != (num_candidates,):
        raise ValueError(f"prior has {prior.shape} values for {num_candidates} candidates")
    if screen is None and settings.screen is not None:
        screen = screen_size(num_candidates, settings.screen)
    order = prior_order(prior)
    prior_rank = np.empty(num_candidates, int)
    prior_rank[order] = np.arange(1, num_candidates + 1)
    racing = [int(c) for c in order[:screen]]
    if not racing:
        raise ValueError(f"screen {screen}: no candidate left to race")

    alpha = 1 - settings.confidence
    racers = len(racing)
    alpha_single = alpha / racers  # two-sided, every candidate's sequence from the first look
    pair = racers == 2  # one sequence per order of the pair serves the drops and within, at alpha
    alpha_drop = alpha if pair else alpha / 2  # one-sided, each candidate's evidence against the leaders (drops.py)
    alpha_within = alpha if pair else alpha / 2 / max(racers - 1, 1)  # one-sided, the pick's distance to each
    total_budget = settings.budget * num_images * num_candidates
    sizes = round_sizes(num_images, racers, min(1.0, total_budget / (num_images * racers)))
    sizes += [num_images] * (sizes[-1] < num_images)  # a last round of what the budget still pays for
    images = np.random.default_rng(settings.seed).permutation(num_images)
    width = high_score - low_score

    scores = np.full((num_candidates, num_images), np.nan)  # by position in ``images``
    plan = np.full(num_images, np.nan)  # per draw: the images per survivor the bets were sized for
    bounds = np.full((num_candidates, 2), np.nan)
    bounds[racing] = score_range  # intersected with every look's sequence
    history, within_history, evidence_history, leaders = [], [], [], []
    pair_bounds: dict[tuple[int, int], float] = {}
    evidence = np.zeros(num_candidates)  # log E_c: each candidate's evidence against the leaders
    alive = list(racing)
    leader = racing[0]  # before any draw: the prior's best
    status = {c: STATUS_LEFT if c in racing else STATUS_SCREENED for c in range(num_candidates)}
    rounds_in = np.zeros(num_candidates, int)
    budget_left = total_budget
    done = 0
    within = math.inf
    stopped_by_within = False
    run: list[int] = []
    for k, size in enumerate(sizes, start=1):
        new = round_images(size, done, len(alive), budget_left)
        if new is None:
            break
        size = done + new
        plan[done:size] = min(num_images, done + budget_left / len(alive))  # fixed before the round's draws
        for c in alive:
            scores[c, done:size] = _checked(score_images(c, images[done:size]), new, names[c], (low_score, high_score))
            rounds_in[c] += 1
        budget_left -= new * len(alive)
        others = [c for c in alive if c != leader]
        leaders.append(leader)
        if others and not pair:  # the round's factors, draw by draw, against the leader fixed at the previous look
            differences = confseq.difference_to_unit(scores[leader, :size] - scores[others, :size], score_range)
            evidence[others] += drops.leader_log_evidence(
                differences, done, num_images, alpha_drop, _tuning(plan[:size], width / 10 / (2 * width))).sum(1)
        done = size
        run.append(size)
        low, high = confseq.two_sided(confseq.to_unit(scores[alive, :done], score_range), num_images, alpha_single,
                                      [done], _tuning(plan[:done], 0.1))
        bounds[alive, 0] = np.maximum(bounds[alive, 0], confseq.from_unit(low[:, 0], score_range))
        bounds[alive, 1] = np.minimum(bounds[alive, 1], confseq.from_unit(high[:, 0], score_range))
        if pair and others:  # both orders of the pair: U_jk < 0 drops j
            drops.update_pair_bounds(scores[:, :done], [(a, b) for a in alive for b in alive if a != b], num_images,
                                     alpha_within, score_range, _tuning(plan[:done], 0.05), pair_bounds)
        shown = ([j for j, i in zip(alive, alive[::-1]) if pair_bounds[j, i] < 0] if pair and others else
                 [c for c in others if evidence[c] >= math.log(1 / alpha_drop)])
        for c in shown if not pair or len(shown) == 1 else []:  # both below 0: one of them failed, drop neither
            status[c] = f"dropped in round {k}"
        alive = [c for c in alive if not status[c].startswith("dropped")]
        means = scores[alive, :done].mean(1)
        leader = alive[min(range(len(alive)), key=lambda j: (-means[j], prior_rank[alive[j]]))]
        within = drops.within_bound(scores[:, :done], alive, leader, num_images, alpha_within, score_range,
                                    _tuning(plan[:done], 0.05), pair_bounds)
        history.append(bounds.copy())
        within_history.append(within)
        evidence_history.append(evidence.copy())
        stopped_by_within = (len(alive) > 1 and settings.within is not None and within <= settings.within
                             and done < num_images)
        if len(alive) == 1 or stopped_by_within:
            break

    if done == num_images and len(alive) > 1:  # the whole split drawn: a survivor below the best is worse, exactly
        means = scores[alive].mean(1)
        for c, mean in zip(alive, means):
            status[c] = f"dropped in round {len(run)}" if mean < means.max() else status[c]
        alive, within = [c for c, mean in zip(alive, means) if mean >= means.max()], 0.0
    counts = (~np.isnan(scores)).sum(1)
    with np.errstate(invalid="ignore", divide="ignore"):
        estimates = np.nansum(scores, axis=1) / counts
    picked = min(alive, key=lambda c: (-estimates[c], prior_rank[c]))
    exact = bool((counts[racing] == num_images).all())  # every raced model on every image: no race is left
    if exact:
        status.update({c: exact_status(estimates[c], estimates[picked]) for c in racing})
        alive, within = [picked], 0.0
    status[picked] = STATUS_PICKED
    table = pd.DataFrame({
        "candidate": names, "prior_rank": prior_rank, "rounds": rounds_in, "images_scored": counts,
        "estimate": estimates, "low": bounds[:, 0], "high": bounds[:, 1],
        "status": [status[c] for c in range(num_candidates)],
        "picked": [c == picked for c in range(num_candidates)],
        "within": [within if c == picked else math.nan for c in range(num_candidates)]})
    spent = int(counts.sum())
    return RaceResult(table, picked, [c for c in alive if c != picked], spent,
                      spent / (num_candidates * num_images), run, alpha_single / 2,
                      {"screened": num_candidates - len(racing)}, alpha_drop,
                      np.array(history).reshape(-1, num_candidates, 2), within, within_history, alpha_within,
                      stopped_by_within, np.array(evidence_history).reshape(-1, num_candidates), leaders,
                      exact=exact, pair_bounds=pair_bounds)


def exact_status(estimate: float, best: float) -> str:
    """A model's status where every model was scored on every image: below or tied with the pick."""
    return STATUS_TIED if estimate >= best else STATUS_BELOW


def _tuning(plan: np.ndarray, prior_sd: float) -> confseq.Tuning:
    """A race's bets: sized for the images each survivor is planned to get (per draw), staking up to
    ``RACE_TRUNCATION`` of the capital, with a prior standard deviation of a tenth of the range (on [0, 1]:
    ``prior_sd``), not the largest possible (1/2)."""
    return confseq.Tuning(truncation=RACE_TRUNCATION, plan=plan, prior_variance=prior_sd ** 2)


def _checked(values, count: int, name: str, score_range: tuple[float, float]) -> np.ndarray:
    """A round's scores of one candidate, f64[count], each inside the metric's range."""
    values = np.asarray(values, np.float64)
    if values.shape != (count,):
        raise ValueError(f"candidate {name}: {values.shape} scores for {count} images")
    outside = ~((values >= score_range[0]) & (values <= score_range[1]))  # NaN is outside too
    if outside.any():
        raise ValueError(f"candidate {name}: score {float(values[outside][0])!r} outside the metric's range "
                         f"[{score_range[0]:g}, {score_range[1]:g}], which the race's bounds assume")
    return values


def prior_order(prior: np.ndarray) -> np.ndarray:
    """Candidates best first by the prior (lower is better; NaN last; ties in candidate order)."""
    return np.argsort(np.where(np.isnan(prior), np.inf, prior), kind="stable")


def race_table(matrix: np.ndarray, settings: RaceSettings, prior=None, names=None, features=None,
               screen: int | None = None, score_range: tuple[float, float] = CIDER_D_RANGE) -> RaceResult:
    """A race on known per-image scores ``matrix: f64[candidates, images]`` (studies, tests):
    each scoring is a lookup, and still counts as one image scored."""
    matrix = np.asarray(matrix, np.float64)
    return race(lambda c, idx: matrix[c, idx], matrix.shape[0], matrix.shape[1], settings, prior, names,
                features, screen, score_range)


def screen_size(num_candidates: int, keep_share: float) -> int:
    """How many candidates a screen keeping ``keep_share`` of them races: ceil, at least 2."""
    if not 0 < keep_share <= 1:
        raise ValueError(f"screen share {keep_share}: expected a share in (0, 1]")
    return min(num_candidates, max(2, math.ceil(keep_share * num_candidates - 1e-9)))
