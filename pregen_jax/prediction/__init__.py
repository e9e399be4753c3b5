"""Predicting new models' post-gen scores from their reference probabilities, calibrated on a
finished search's models (``pregen-search predict``).

``calibrated`` (``predict_scores``: per model and post-gen metric, the prediction from the
chosen pre-gen metric and from perplexity, with intervals; the models' order and the pairs the
intervals cannot separate), ``conformal`` (the conformal sets, valid after choosing the metric; ``conformal_set`` computes
them exactly, islands and unbounded sides included),
``domain`` (where a new model lies against the calibration models), ``calibration_set`` (what
the predictions of one run share) and ``measured`` (the real scores of captions, beside them).
"""
from .calibrated import CHOSEN, COLUMNS, PERPLEXITY, RANGES, Scores, order_and_pairs, predict_scores
from .calibration_set import CalibrationSet, calibration_set
from .measured import measured_scores

__all__ = ["CHOSEN", "COLUMNS", "PERPLEXITY", "RANGES", "CalibrationSet", "Scores", "calibration_set",
           "measured_scores", "order_and_pairs", "predict_scores"]
