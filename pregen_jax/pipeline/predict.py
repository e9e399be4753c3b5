"""``pregen-search predict``: a new model's post-gen scores from its reference probabilities alone.

A finished search calibrates, per post-gen metric, a straight line from the chosen pre-gen
metric (its best by R^2 over strata, or one the user names) to the post-gen score over the
search's models (whole-test-set rows); the new model's pre-gen value then gives a prediction
with a 90% interval (``ranking.calibration``). Valid only for models like the search's, on the
same test references: both are checked, with a warning.
"""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .. import ranking, tiers
from ..ranking import calibration, decisions
from ..refprobs import RefProbs
from .config import SearchConfig
from .stages import tier_space


def _choices(run: Path, table: pd.DataFrame, pregen: str | None) -> dict[str, str]:
    choices = {}
    for path in sorted(run.glob("correlations_*.tsv")):
        post = path.stem.removeprefix("correlations_")
        if post in table.columns:
            ranked = pd.read_csv(path, sep="\t")
            choices[post] = pregen or ranked["pregen"].iloc[0]
    if not choices:
        raise ValueError(f"{run}: no correlations_<POSTGEN>.tsv: not a finished search's run folder")
    return choices


def reference_mismatch(saved: np.ndarray, ref_probs: RefProbs) -> str | None:
    """Where a RefProbs's references differ from the search's (lengths per image and reference), or None."""
    lengths = ref_probs.lengths
    if lengths.shape[0] != saved.shape[0]:
        return f"{lengths.shape[0]} images, the search's test split has {saved.shape[0]}"
    width = max(lengths.shape[1], saved.shape[1])
    ours, theirs = (np.pad(a, ((0, 0), (0, width - a.shape[1]))) for a in (lengths, saved))
    if (ours != theirs).any():
        i, r = np.argwhere(ours != theirs)[0]
        return f"image {i}, reference {r} has {ours[i, r]} positions, the search's has {theirs[i, r]}"
    return None


def predict(run, refprobs_path, pregen: str | None = None, level: float = 0.9) -> pd.DataFrame:
    """One row per post-gen metric: ``postgen``, ``pregen``, ``predicted``, ``low``, ``high``,
    ``calibration_models``, ``outside_calibration_range``, ``loo_mean_abs_error``."""
    run = Path(run)
    if not (run / "table.tsv").is_file():
        raise ValueError(f"{run}: no table.tsv: not a finished search's run folder")
    table = ranking.read_table(run / "table.tsv")
    config = SearchConfig.load(run / "config.toml")
    space = tier_space(config.pregen)
    if pregen is not None and pregen not in space.names:
        raise ValueError(f"--pregen {pregen!r} is not a metric of the search's space")
    choices = _choices(run, table, pregen)
    models = decisions.model_rows(table).reset_index(drop=True)
    ref_probs = RefProbs.load(refprobs_path)
    if (run / "reference_lengths.npy").is_file():
        mismatch = reference_mismatch(np.load(run / "reference_lengths.npy"), ref_probs)
        if mismatch:  # pre-gen values of other references are on another scale: a prediction would be wrong
            raise ValueError(f"{refprobs_path}: not the search's test references ({mismatch}); compute the new "
                             "model's reference probabilities on the search's test split")
    scores = tiers.sweep(ref_probs, None, space)[0]
    values = {name: float(scores[space.names.index(name)]) for name in set(choices.values())}
    frame = calibration.prediction_table(models, choices, values, level)
    for _, row in frame[frame["outside_calibration_range"]].iterrows():
        warnings.warn(f"{refprobs_path}: its {row['pregen']} = {values[row['pregen']]:.4g} lies outside the range of "
                      f"the search's {row['calibration_models']} models: the {row['postgen']} prediction extrapolates",
                      stacklevel=2)
    return frame
