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

from .jit import compiled

STAGES = ("exact", "stem", "synonym", "paraphrase")
MODULE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)       # the jar's ``en`` weights, one per stage (the score)
# the weights the jar's aligner ranks partial alignments by: ``MeteorScorer`` replaces the ``en``
# weights with these (``aligner.updateModuleWeights``, "best weights for evaluation"); they
# differ in the search only where a match of 4 or more words truncates differently
ALIGN_WEIGHTS = (1.0, 0.5, 0.5, 0.5)
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.2, 0.6, 0.75  # the jar's ``en`` parameters (task rank)
K = 4 + 4 * len(STAGES) + 3
TEST_LEN, REF_LEN, TEST_FUNC, REF_FUNC = 0, 1, 2, 3
CHUNKS, TEST_WORDS, REF_WORDS = K - 3, K - 2, K - 1


def matched(stats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(test words matched, reference words matched) summed over the stages: f64[...] each."""
    stages = stats[..., 4:CHUNKS]
    return stages[..., 0::4].sum(-1) + stages[..., 2::4].sum(-1), stages[..., 1::4].sum(-1) + stages[..., 3::4].sum(-1)


@compiled(inline=True)
def row_perfect(row) -> bool:
    """One row (f64[k]) matches every word in one chunk (the jar adds no chunk for it, and it has
    no fragmentation)."""
    test = 0.0
    ref = 0.0
    for stage in range(len(STAGES)):
        test += row[4 + 4 * stage] + row[6 + 4 * stage]
        ref += row[5 + 4 * stage] + row[7 + 4 * stage]
    return test == row[TEST_LEN] and ref == row[REF_LEN] and row[CHUNKS] == 1.0


@compiled(inline=True)
def row_score(row) -> float:
    """One statistics row's METEOR (f64[k] -> float), in the jar's order of float operations
    (``computeMetrics``): weighted precision and recall (a running sum from 0: content stages in
    order, then function stages), their alpha-weighted harmonic mean, times one minus the
    fragmentation penalty; a perfect row has no fragmentation. Where the jar divides by zero (an
    empty sentence, no match) its NaN scores 0, as here. The one place the formula is written:
    the compiled search scores pairs with it, ``meteor_of_sums`` any rows."""
    test_length = DELTA * (row[TEST_LEN] - row[TEST_FUNC]) + (1.0 - DELTA) * row[TEST_FUNC]
    ref_length = DELTA * (row[REF_LEN] - row[REF_FUNC]) + (1.0 - DELTA) * row[REF_FUNC]
    test = 0.0
    ref = 0.0
    for stage in range(len(STAGES)):
        test += row[4 + 4 * stage] * MODULE_WEIGHTS[stage] * DELTA
    for stage in range(len(STAGES)):
        ref += row[5 + 4 * stage] * MODULE_WEIGHTS[stage] * DELTA
    for stage in range(len(STAGES)):
        test += row[6 + 4 * stage] * MODULE_WEIGHTS[stage] * (1.0 - DELTA)
    for stage in range(len(STAGES)):
        ref += row[7 + 4 * stage] * MODULE_WEIGHTS[stage] * (1.0 - DELTA)
    if test_length == 0.0 or ref_length == 0.0 or test == 0.0 or ref == 0.0:
        return 0.0  # Java's NaN (or a zero harmonic mean)
    precision = test / test_length
    recall = ref / ref_length
    f_mean = 1.0 / (((1.0 - ALPHA) / precision) + (ALPHA / recall))
    frag = 0.0 if row_perfect(row) else row[CHUNKS] / ((row[TEST_WORDS] + row[REF_WORDS]) / 2)
    return max(f_mean * (1.0 - GAMMA * frag ** BETA), 0.0)


@compiled
def _rows(rows, perfect_only):
    out = np.empty(len(rows))
    for r in range(len(rows)):
        out[r] = row_perfect(rows[r]) if perfect_only else row_score(rows[r])
    return out


def perfect(stats: np.ndarray) -> np.ndarray:
    """bool[...]: ``row_perfect`` of each row of ``stats`` (f64[..., k])."""
    stats = np.ascontiguousarray(stats, np.float64)
    return _rows(stats.reshape(-1, K), True).reshape(stats.shape[:-1]).astype(bool)


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
    """f64[...]: METEOR (``row_score``) of each statistics row of ``stats`` (f64[..., k])."""
    stats = np.ascontiguousarray(stats, np.float64)
    return _rows(stats.reshape(-1, K), False).reshape(stats.shape[:-1])


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
