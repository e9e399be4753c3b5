"""N new models' post-gen scores predicted from their reference probabilities (``pregen-search predict``).

A finished search's models calibrate, per post-gen metric, a straight line from a pre-gen metric
to the post-gen score. The metric is chosen by ``predict`` itself (the candidate with the highest
R^2 over the calibration models' whole-test-set values; or the one ``--pregen`` names), and the
choice is part of what the set accounts for: full conformal prediction with the choice made
inside every fit (``conformal``: at least ``level`` coverage for a model exchangeable with the
search's, after choosing, marginally: not among the rows left after some are withheld), the set
computed exactly and reported whole (``set``, ``pieces``; ``low`` and ``high`` its outermost ends).
The same from the perplexity baseline, beside it. The set is cut at the post-gen metric's range
(never to a point), and the narrower of the two is named where both are bounded. A row without
a number, or with an unbounded set, says why in ``status`` and ``why``.

Each new model is first placed against the calibration models (``domain``: perplexity, the
chosen metrics and the next informative ones, in spans of their range). A model beyond the
threshold on the predictor's own metric gets no prediction from it (which side, how far); one
beyond it on another axis is predicted but flagged, naming the axis and how far out, and left out
of the order; where the chosen metric and perplexity disagree about the range, the note says so.
Across the models: their order by the chosen metric's prediction, and the pairs whose intervals
overlap (which the prediction cannot separate).

Only RefProbs computed on what the calibration was fitted on are scored: the same test
references in the same order, the same vocabulary, the same units (their fingerprint,
``refprobs.ReferenceFingerprint``). Anything else is refused up front, naming the difference.
"""
from __future__ import annotations

import dataclasses
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from .. import tiers
from ..pipeline.finished import UNKNOWN, FinishedSearch
from ..ranking import PERPLEXITY_BASELINE
from ..refprobs import RefProbs
from . import conformal, domain
from .calibration_set import CalibrationSet, calibration_set
from .measured import measured_scores

# The range of each post-gen metric's corpus score (pycocoevalcap's scales; WMD as exp(-distance)).
RANGES: dict[str, tuple[float, float]] = {
    "CIDEr": (0.0, math.inf), "METEOR": (0.0, 1.0), "SPICE": (0.0, 1.0), "WMD": (0.0, 1.0), "ROUGE_L": (0.0, 1.0),
    **{f"Bleu_{n}": (0.0, 1.0) for n in range(1, 5)}}
CHOSEN, PERPLEXITY = "chosen", "perplexity"
COLUMNS = ["model", "file", "perplexity", "postgen", "predictor", "pregen", "pregen_value", "predicted", "low",
           "high", "set", "pieces", "status", "why", "measured", "range", "clipped", "narrower", "outside_calibration_range", "side", "distance",
           "calibration_min", "calibration_max", "calibration_models", "loo_mean_abs_error", "flag",
           "domain_threshold", "note", "decoding",
           "vocabulary", "units", "tokenizer"]


@dataclasses.dataclass
class Scores:
    """What ``predict_scores`` found.

    Attributes:
      predictions: one row per (model, post-gen metric, predictor), columns ``COLUMNS``;
        predictor ``chosen`` (the run's pre-gen metric) or ``perplexity`` (the baseline).
      order: one row per (post-gen, predictor, model): ``position`` 1 = highest prediction.
      pairs: one row per (post-gen, predictor, model pair): ``separable`` False where the two
        intervals overlap.
      level: the intervals' level.
      calibration: the calibration models, choices and domain the predictions rest on.
    """

    predictions: pd.DataFrame
    order: pd.DataFrame
    pairs: pd.DataFrame
    level: float
    calibration: CalibrationSet


def model_names(paths: list) -> list[str]:
    """A short name per file (its stem; the path where stems repeat)."""
    stems = [Path(p).stem for p in paths]
    return [stem if stems.count(stem) == 1 else str(p) for stem, p in zip(stems, paths)]


def load_checked(run: FinishedSearch, paths: list) -> list[RefProbs]:
    """Every file read and matched to the run's references before any work (ValueError otherwise)."""
    if not paths:
        raise ValueError("--refprobs: name at least one RefProbs .npz")
    loaded = []
    for path in paths:
        ref_probs = RefProbs.load(path)
        run.check_refprobs(ref_probs, str(path))
        loaded.append(ref_probs)
    return loaded


def clip(value: float, bounds: tuple[float, float]) -> float:
    return float(np.clip(value, *bounds)) if np.isfinite(value) else value


def _range_text(bounds: tuple[float, float] | None) -> str:
    if bounds is None:
        return "unknown (not clipped)"
    low, high = bounds
    return f"[{low:g}, {'inf)' if math.isinf(high) else f'{high:g}]'}"


def set_text(pieces, digits: int = 3) -> str:
    """The set as printed: ``[0.401, 0.533]``, ``[0.401, 0.433] or [0.45, 0.533]`` (islands), ``[0.401, inf)``."""
    def end(v: float) -> str:
        return f"{v:.{digits}f}" if np.isfinite(v) else ("-inf" if v < 0 else "inf")
    return " or ".join(f"{'(' if np.isinf(a) else '['}{end(a)}, {end(b)}{')' if np.isinf(b) else ']'}"
                       for a, b in pieces)


def _withheld(axis: str, placement: domain.Placement) -> dict:
    """Where a predictor's own metric lies beyond the domain's threshold: which side, how far."""
    a = placement.axes.index(axis)
    low, high = placement.low[a], placement.high[a]
    return {"outside_calibration_range": True, "side": placement.sides[a],
            "distance": placement.distances[a] * (high - low), "calibration_min": low, "calibration_max": high,
            "status": "withheld",
            "why": f"outside the calibration models' domain on its own metric: {placement.describe(axis)} (beyond "
                   f"{placement.threshold:.2g} spans nothing says the line holds)"}


def _cut(pieces, bounds) -> list[tuple[float, float]]:
    """The pieces cut at the metric's range (infinite ends too); a piece wholly outside it (or cut to a point)
    is dropped."""
    if bounds is None:
        return list(pieces)
    cut = [(float(np.clip(a, *bounds)), float(np.clip(b, *bounds))) for a, b in pieces]
    return [(a, b) for a, b in cut if b > a]


def _still_unbounded(reason: str, low: float, high: float) -> str:
    """The parts of ``conformal.Interval.reason`` for the sides the metric's range leaves unbounded."""
    keep = [part for part in reason.split("; ") if part.startswith("unbounded:")
            or (part.startswith("unbounded below") and low == -np.inf)
            or (part.startswith("unbounded above") and high == np.inf)]
    return "; ".join(keep)


def _predict(cal: CalibrationSet, names: list[str], post: str, values: dict, bounds) -> dict:
    """One prediction with its conformal set, the choice among ``names`` inside every fit (cut at ``bounds``),
    or ``status`` and ``why`` saying why there is none (or why its set is unbounded)."""
    none = {"predicted": np.nan, "low": np.nan, "high": np.nan, "set": "", "pieces": 0, "status": "none", "why": "",
            "clipped": False, "outside_calibration_range": False, "side": "", "distance": np.nan,
            "calibration_models": cal.n, "loo_mean_abs_error": np.nan}
    x = cal.models[names].to_numpy(np.float64)
    y = cal.models[post].to_numpy(np.float64)
    x_new = np.array([values[name] for name in names], np.float64)
    try:
        made = conformal.conformal_interval(x, y, x_new, cal.level)
    except ValueError as err:
        return {**none, "pregen": names[0], "calibration_min": np.nan, "calibration_max": np.nan, "why": str(err)}
    metric = names[made.chosen]
    own = cal.models[metric].to_numpy(np.float64)
    where = {"pregen": metric, "calibration_min": float(own.min()), "calibration_max": float(own.max()),
             "loo_mean_abs_error": float(conformal.loo_errors(x[:, made.columns], y).mean())}
    placement = domain.place(own[:, None], np.array([values[metric]]), [metric], cal.threshold)
    if placement.flagged():
        return {**none, **where, **_withheld(metric, placement)}
    if not made.high > made.low:
        return {**none, **where, "why": "the calibration models lie exactly on their line: no set of positive "
                                        "width to give"}
    pieces = _cut(made.pieces, bounds)
    if not pieces:  # the whole set beyond the metric's range: no point to clip it to
        return {**none, **where, "why": f"the conformal set {set_text(made.pieces)} lies outside {post}'s range "
                                        f"{_range_text(bounds)}"}
    predicted = clip(made.predicted, bounds) if bounds is not None else made.predicted
    low, high = pieces[0][0], pieces[-1][1]
    bounded = bool(np.isfinite([low, high]).all())
    side, distance = placement.sides[0], placement.distances[0] * (where["calibration_max"] - where["calibration_min"])
    return {**none, **where, "predicted": predicted, "low": low, "high": high, "set": set_text(pieces),
            "pieces": len(pieces), "status": "predicted" if bounded else "unbounded",
            "why": "" if bounded else _still_unbounded(made.reason, low, high), "clipped": pieces != list(made.pieces) or predicted != made.predicted,
            "side": side, "distance": distance}


def _disagreement(placement: domain.Placement, chosen: str) -> str:
    """A note where perplexity and the chosen metric disagree about whether the model is in range."""
    if PERPLEXITY_BASELINE not in placement.axes or chosen not in placement.axes:
        return ""
    if placement.flagged(chosen) == placement.flagged(PERPLEXITY_BASELINE):
        return ""
    out, inside = ((chosen, PERPLEXITY_BASELINE) if placement.flagged(chosen) else (PERPLEXITY_BASELINE, chosen))
    return (f"the two predictors disagree about the range: {placement.describe(out)}, while {inside} places it "
            "inside the calibration models' domain")


def predict_scores(run: FinishedSearch, paths: list, pregen: str | None = None, level: float = 0.9,
                   captions: list | None = None, calibration: CalibrationSet | None = None,
                   loaded: list[RefProbs] | None = None) -> Scores:
    """Predict every post-gen metric of the run for each RefProbs file in ``paths`` (see the module docstring);
    with ``captions`` (one file per model, same order), measure each model's post-gen scores too.
    ``calibration``, ``loaded``: the run's ``calibration_set`` and the files as ``load_checked`` read them,
    when the caller has them already."""
    from ..captioning.evaluate import perplexity
    from ..pipeline.space import tier_space
    cal = calibration or calibration_set(run, pregen, level)
    if captions is not None and len(captions) != len(paths):
        raise ValueError(f"--captions: {len(captions)} file(s) for {len(paths)} --refprobs file(s); give one "
                         "captions file per model, in the same order")
    loaded = loaded if loaded is not None else load_checked(run, paths)
    truth = measured_scores(run, captions) if captions else [{} for _ in paths]
    space = tier_space(run.config.pregen)
    axes_x = cal.models[cal.axes].to_numpy(np.float64)
    references = run.references
    rows = []
    for name, path, ref_probs, scores in zip(model_names(paths), paths, loaded, truth):
        values = dict(zip(space.names, np.asarray(tiers.sweep(ref_probs, None, space)[0], np.float64)))
        placement = domain.place(axes_x, np.array([values[a] for a in cal.axes]), cal.axes, cal.threshold)
        for post, candidates in cal.candidates.items():
            bounds = RANGES.get(post)
            predictors = [(CHOSEN, candidates)]
            if PERPLEXITY_BASELINE in values and PERPLEXITY_BASELINE in cal.models.columns:
                predictors.append((PERPLEXITY, [PERPLEXITY_BASELINE]))
            made = []
            for predictor, names in predictors:
                row = _predict(cal, names, post, values, bounds)
                flag = "" if row["outside_calibration_range"] else placement.flags()
                note = _disagreement(placement, cal.chosen[post])
                made.append({"model": name, "file": str(path), "perplexity": perplexity(ref_probs), "postgen": post,
                             "predictor": predictor, "pregen_value": values[row["pregen"]], **row,
                             "flag": flag, "domain_threshold": cal.threshold,
                             "note": note, "measured": scores.get(post, np.nan),
                             "range": _range_text(bounds), "decoding": UNKNOWN,
                             "vocabulary": ref_probs.references.vocabulary, "units": references.units,
                             "tokenizer": run.tokenizer})
            rows += _name_the_narrower(made)
    predictions = pd.DataFrame(rows, columns=COLUMNS)
    order, pairs = order_and_pairs(predictions)
    return Scores(predictions, order, pairs, level=cal.level, calibration=cal)


def _name_the_narrower(made: list[dict]) -> list[dict]:
    """``narrower`` True on the one prediction whose interval is strictly narrower, only where every
    predictor gave a bounded interval (never an extrapolated or missing one)."""
    widths = np.array([r["high"] - r["low"] for r in made], np.float64)
    comparable = len(made) > 1 and bool(np.isfinite(widths).all())
    for r, width in zip(made, widths):
        r["narrower"] = bool(comparable and width == widths.min() and np.count_nonzero(widths == width) == 1)
    return made


def order_and_pairs(predictions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The models' order by prediction (highest first) and, per pair, whether the intervals separate them;
    flagged models (outside the calibration models' domain) are left out."""
    order, pairs = [], []
    for (post, predictor), rows in predictions.groupby(["postgen", "predictor"], sort=False):
        rows = rows[np.isfinite(rows["predicted"].to_numpy(np.float64)) & (rows["flag"].fillna("") == "")]
        ranked = rows.sort_values("predicted", ascending=False, kind="stable")
        for position, (_, row) in enumerate(ranked.iterrows(), 1):
            order.append({"postgen": post, "predictor": predictor, "position": position, "model": row["model"],
                          "predicted": row["predicted"], "low": row["low"], "high": row["high"]})
        for (_, a), (_, b) in itertools.combinations(ranked.iterrows(), 2):
            overlap = a["low"] <= b["high"] and b["low"] <= a["high"]
            pairs.append({"postgen": post, "predictor": predictor, "model_a": a["model"], "model_b": b["model"],
                          "difference": a["predicted"] - b["predicted"], "separable": not overlap})
    return (pd.DataFrame(order, columns=["postgen", "predictor", "position", "model", "predicted", "low", "high"]),
            pd.DataFrame(pairs, columns=["postgen", "predictor", "model_a", "model_b", "difference", "separable"]))
