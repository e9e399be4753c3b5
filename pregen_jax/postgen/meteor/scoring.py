# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""METEOR 1.5's statistics line and its score, with the ``en`` parameters (``-l en -norm``).

A statistics row (``k = 23`` fields, the order of the jar's ``SCORE`` lines): test and reference
lengths, their function words, then per matching stage (exact, stem, synonym, paraphrase) the
test content, reference content, test function and reference function words matched, then
chunks and the test and reference words matched. Every field is a count, so sums of rows are
exact in float64 whatever their order.

The formula, its ``en`` parameters and its order of operations are translated from Meteor 1.5's
Java ``MeteorScorer.computeMetrics``, ``MeteorStats`` and ``Constants`` (Michael Denkowski and Alon
Lavie, Carnegie Mellon University), so this file is under their licence, LGPL-2.1-only
(docs/licensing.md).
"""
from __future__ import annotations

import numpy as np

STAGES = ("exact", "stem", "synonym", "paraphrase")
MODULE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)       # the jar's ``en`` weights, one per stage
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75  # the jar's ``en`` parameters (task rank)
K = 4 + 4 * len(STAGES) + 3
TEST_LEN, REF_LEN, TEST_FUNC, REF_FUNC = 0, 1, 2, 3
CHUNKS, TEST_WORDS, REF_WORDS = K - 3, K - 2, K - 1


def matched(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(test words matched, reference words matched) summed over the stages: f64[...] each."""
    stages = stats[..., 4:CHUNKS]
    return stages[..., 0::4].sum(-1) + stages[..., 2::4].sum(-1), stages[..., 1::4].sum(-1) + stages[..., 3::4].sum(-1)


def perfect(stats: np.ndarray) -> np.ndarray:
    """bool[...]: every word matched in one chunk (the jar adds no chunk for such a row)."""
    test, reference = matched(stats)
    return (test == stats[..., TEST_LEN]) & (reference == stats[..., REF_LEN]) & (stats[..., CHUNKS] == 1)


def eval_rows(stats: np.ndarray) -> np.ndarray:
    """f64[..., k]: SCORE rows as the jar's EVAL adds them (``MeteorStats.addStats``): a perfect row
    adds no chunk. A row's own score is unchanged (a perfect row has no fragmentation either way),
    so sums of these rows are the jar's summed statistics."""
    stats = np.array(stats, np.float64)
    stats[..., CHUNKS] = np.where(perfect(stats), 0.0, stats[..., CHUNKS])
    return stats


def summed(stats: np.ndarray) -> np.ndarray:
    """f64[..., k]: the SCORE rows of ``stats`` (f64[..., images, k]) added as EVAL adds them."""
    return eval_rows(stats).sum(-2)


def meteor_of_sums(stats: np.ndarray) -> np.ndarray:
    """f64[...]: METEOR of statistics rows f64[..., k], in the jar's order of float operations
    (``computeMetrics``): weighted precision and recall, their alpha-weighted harmonic mean,
    times one minus the fragmentation penalty; a perfect row has no fragmentation; NaN is 0."""
    stats = np.asarray(stats, np.float64)
    weights = np.asarray(MODULE_WEIGHTS)
    stages = stats[..., 4:CHUNKS].reshape(stats.shape[:-1] + (len(STAGES), 4))
    with np.errstate(divide="ignore", invalid="ignore"):
        test_length = DELTA * (stats[..., TEST_LEN] - stats[..., TEST_FUNC]) + (1.0 - DELTA) * stats[..., TEST_FUNC]
        ref_length = DELTA * (stats[..., REF_LEN] - stats[..., REF_FUNC]) + (1.0 - DELTA) * stats[..., REF_FUNC]
        test_matches = _ordered_sum(stages[..., 0] * weights * DELTA, stages[..., 2] * weights * (1.0 - DELTA))
        ref_matches = _ordered_sum(stages[..., 1] * weights * DELTA, stages[..., 3] * weights * (1.0 - DELTA))
        precision = test_matches / test_length
        recall = ref_matches / ref_length
        f_mean = 1.0 / (((1.0 - ALPHA) / precision) + (ALPHA / recall))
        words = (stats[..., TEST_WORDS] + stats[..., REF_WORDS]) / 2
        frag = np.where(perfect(stats), 0.0, stats[..., CHUNKS] / words)
        result = f_mean * (1.0 - GAMMA * np.power(frag, BETA))
    return np.where(np.isnan(result), 0.0, np.maximum(result, 0.0))


def _ordered_sum(content: np.ndarray, function: np.ndarray) -> np.ndarray:
    """Java's running sum: 0 + content stages in order, then function stages in order."""
    total = np.zeros(content.shape[:-1])
    for column in (content, function):
        for stage in range(column.shape[-1]):
            total = total + column[..., stage]
    return total


def aggregate(stats: np.ndarray) -> np.ndarray:
    """f64[...]: the corpus METEOR of statistics rows f64[..., images, k] (as EVAL scores them):
    per-image scores are ``aggregate(stats[:, None, :])``."""
    return meteor_of_sums(summed(np.asarray(stats, np.float64)))


def parse(line: str) -> np.ndarray:
    """f64[k]: a ``SCORE`` reply line."""
    return np.array(line.split(), np.float64)


def java_double(value: float) -> str:
    """A count as Java's ``Double.toString`` writes it (``6.0``)."""
    return repr(float(value))
