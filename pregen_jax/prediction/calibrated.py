"""N new models' post-gen scores predicted from their reference probabilities (``pregen-search predict``).

A finished search (``FinishedSearch``) calibrates, per post-gen metric, a straight line from
the pre-gen metric it chose (its best by R^2 over strata, or one the user names) to the
post-gen score over the search's models (``ranking.calibration``), and the same from the
perplexity baseline. Each new model gets both predictions with their jackknife+ intervals
(``jackknife``: at least ``level`` coverage for a model exchangeable with the search's), the
ends cut at the post-gen metric's range (never to a point), and the narrower of the two is
named where both exist. A model whose pre-gen value lies outside the calibration models' range
gets no prediction from that predictor: which side, and how far (``side``, ``distance``).
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
from ..ranking import PERPLEXITY_BASELINE, calibration
from ..refprobs import RefProbs
from . import jackknife
from .measured import measured_scores

# The range of each post-gen metric's corpus score (pycocoevalcap's scales; WMD as exp(-distance)).
RANGES: dict[str, tuple[float, float]] = {
    "CIDEr": (0.0, math.inf), "METEOR": (0.0, 1.0), "SPICE": (0.0, 1.0), "WMD": (0.0, 1.0), "ROUGE_L": (0.0, 1.0),
    **{f"Bleu_{n}": (0.0, 1.0) for n in range(1, 5)}}
CHOSEN, PERPLEXITY = "chosen", "perplexity"
COLUMNS = ["model", "file", "perplexity", "postgen", "predictor", "pregen", "pregen_value", "predicted", "low",
           "high", "measured", "range", "clipped", "narrower", "outside_calibration_range", "side", "distance",
           "calibration_min", "calibration_max", "calibration_models", "loo_mean_abs_error", "note", "decoding",
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
    """

    predictions: pd.DataFrame
    order: pd.DataFrame
    pairs: pd.DataFrame
    level: float


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


def _predict(model_rows: pd.DataFrame, pregen: str, post: str, value: float, level: float,
             bounds: tuple[float, float] | None) -> dict:
    """One prediction with its jackknife+ interval (ends cut at ``bounds``); none outside the calibration
    models' range (``side``, ``distance`` say where), or where the run's data cannot calibrate (a
    note says why)."""
    none = {"predicted": np.nan, "low": np.nan, "high": np.nan, "clipped": False}
    try:
        jk = jackknife.leave_one_out_lines(model_rows, pregen, post)
        loo = float(calibration.loo_abs_errors(model_rows, pregen, post).mean())
    except ValueError as err:
        return {**none, "outside_calibration_range": False, "side": "", "distance": np.nan, "calibration_min": np.nan,
                "calibration_max": np.nan, "calibration_models": len(model_rows), "loo_mean_abs_error": np.nan,
                "note": str(err)}
    side, distance = jackknife.place(jk, value)
    where = {"outside_calibration_range": side != "inside", "side": side, "distance": distance,
             "calibration_min": jk.x_min, "calibration_max": jk.x_max, "calibration_models": jk.models,
             "loo_mean_abs_error": loo}
    if side != "inside":
        return {**none, **where, "note": "no prediction outside the range of the search's models' pre-gen values: "
                                         "nothing there says the line holds"}
    raw = (jackknife.line_value(jk, value), *jackknife.jackknife_plus_interval(jk, value, level))
    made = tuple(clip(v, bounds) for v in raw) if bounds is not None else raw
    note = ""
    if not np.isfinite(made[1:]).all():
        note = (f"{jk.models} models give no bounded {100 * level:g}% jackknife+ interval (at most "
                f"{100 * jackknife.max_level(jk.models):.0f}%): lower --level or calibrate on more models")
    if raw[2] <= raw[1]:
        return {**none, **where, "note": "the calibration models lie exactly on their line: no interval of positive "
                                         "width to give"}
    if made[2] <= made[1]:  # the whole interval beyond the metric's range: no point to clip it to
        return {**none, **where, "note": f"the interval lies outside {post}'s range {_range_text(bounds)}"}
    return {**where, "predicted": made[0], "low": made[1], "high": made[2], "clipped": made != raw, "note": note}


def predict_scores(run: FinishedSearch, paths: list, pregen: str | None = None, level: float = 0.9,
          captions: list | None = None) -> Scores:
    """Predict every post-gen metric of the run for each RefProbs file in ``paths`` (see the module docstring);
    with ``captions`` (one file per model, same order), measure each model's post-gen scores too."""
    from ..captioning.evaluate import perplexity
    from ..pipeline.space import tier_space
    if not 0 < level < 1:
        raise ValueError(f"--level {level}: must lie strictly between 0 and 1")
    choices = run.chosen(pregen)
    if not choices:
        raise ValueError(f"{run.folder}: the search ranked no pre-gen metric against any post-gen metric")
    if captions is not None and len(captions) != len(paths):
        raise ValueError(f"--captions: {len(captions)} file(s) for {len(paths)} --refprobs file(s); give one "
                         "captions file per model, in the same order")
    loaded = load_checked(run, paths)
    truth = measured_scores(run, captions) if captions else [{} for _ in paths]
    space = tier_space(run.config.pregen)
    model_rows = run.model_rows
    references = run.references
    rows = []
    for name, path, ref_probs, scores in zip(model_names(paths), paths, loaded, truth):
        values = dict(zip(space.names, np.asarray(tiers.sweep(ref_probs, None, space)[0], np.float64)))
        for post, chosen in choices.items():
            bounds = RANGES.get(post)
            predictors = [(CHOSEN, chosen)]
            if PERPLEXITY_BASELINE in values:
                predictors.append((PERPLEXITY, PERPLEXITY_BASELINE))
            made = []
            for predictor, metric in predictors:
                row = _predict(model_rows, metric, post, values[metric], level, bounds)
                made.append({"model": name, "file": str(path), "perplexity": perplexity(ref_probs), "postgen": post,
                             "predictor": predictor, "pregen": metric, "pregen_value": values[metric], **row,
                             "measured": scores.get(post, np.nan), "range": _range_text(bounds),
                             "decoding": UNKNOWN, "vocabulary": ref_probs.references.vocabulary,
                             "units": references.units, "tokenizer": run.tokenizer})
            rows += _name_the_narrower(made)
    predictions = pd.DataFrame(rows, columns=COLUMNS)
    order, pairs = order_and_pairs(predictions)
    return Scores(predictions, order, pairs, level)


def _name_the_narrower(made: list[dict]) -> list[dict]:
    """``narrower`` True on the one prediction whose interval is strictly narrower, only where every
    predictor gave a bounded interval (never an extrapolated or missing one)."""
    widths = np.array([r["high"] - r["low"] for r in made], np.float64)
    comparable = len(made) > 1 and bool(np.isfinite(widths).all())
    for r, width in zip(made, widths):
        r["narrower"] = bool(comparable and width == widths.min() and np.count_nonzero(widths == width) == 1)
    return made


def order_and_pairs(predictions: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The models' order by prediction (highest first) and, per pair, whether the intervals separate them."""
    order, pairs = [], []
    for (post, predictor), rows in predictions.groupby(["postgen", "predictor"], sort=False):
        rows = rows[np.isfinite(rows["predicted"].to_numpy(np.float64))]
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
