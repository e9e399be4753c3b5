# SPDX-FileCopyrightText: 2021 confseq developers
#   (confseq, src/confseq/betting.py and betting_strategies.py: Ian Waudby-Smith; github.com/gostevehoward/confseq)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Confidence sequences without replacement (ranking.confseq): against a slow transcription of
Waudby-Smith and Ramdas' algorithm on a grid (and confseq itself where it installs), valid at every
look in simulation, exact once the whole population is drawn.

``_transcribed`` follows confseq's ``betting_cs`` / ``betting_mart`` / ``cs_from_martingale`` and
``lambda_predmix_eb`` step by step (as plain loops), so it carries confseq's copyright under its
licence, MIT (docs/licensing.md)."""
import math

import numpy as np
import pytest

from pregen_jax.ranking import confseq

BREAKS = 1000


def _transcribed(x, population, alpha, theta=0.5, breaks=BREAKS):
    """The hedged without-replacement betting sequence as the papers define it, one candidate mean
    m of the grid k / breaks and one draw at a time (confseq.betting.betting_cs's defaults: the
    predictable plug-in bets at alpha * theta and alpha * (1 - theta), truncation 1/2, the grid's
    accepted range widened by one step, then intersected with the logical bounds). Slow, plain."""
    t_max = len(x)
    bets = {}
    for side, level in (("+", alpha * theta), ("-", alpha * (1 - theta))):
        variance_before, squares, total, out = 0.25, 0.0, 0.0, []
        for t in range(1, t_max + 1):
            out.append(math.sqrt(2 * math.log(1 / level) / (t * math.log(1 + t) * variance_before))
                       if level > 0 else 0.0)
            total += x[t - 1]
            mean_t = min((0.5 + total) / (t + 1), 1.0)
            squares += (x[t - 1] - mean_t) ** 2
            variance_before = (0.25 + squares) / (t + 1)
        bets[side] = out
    low, high = np.zeros(t_max), np.ones(t_max)
    accepted = np.zeros((breaks + 1, t_max), bool)
    for k in range(breaks + 1):
        m = k / breaks
        plus = minus = 1.0
        drawn = 0.0
        for t in range(1, t_max + 1):
            mu = (population * m - drawn) / (population - t + 1)  # mean of the values not yet drawn
            if not 0 <= mu <= 1:
                accepted[k, t - 1:] = False
                break
            lam_plus = min(bets["+"][t - 1], 0.5 / mu) if mu > 0 else bets["+"][t - 1]
            lam_minus = min(bets["-"][t - 1], 0.5 / (1 - mu)) if mu < 1 else bets["-"][t - 1]
            plus *= 1 + lam_plus * (x[t - 1] - mu)
            minus *= 1 - lam_minus * (x[t - 1] - mu)
            capital = max(theta * plus, (1 - theta) * minus)
            accepted[k, t - 1] = capital <= 1 / alpha
            drawn += x[t - 1]
    grid = np.arange(breaks + 1) / breaks
    for t in range(t_max):
        inside = grid[accepted[:, t]]
        if len(inside):
            low[t], high[t] = inside[0], inside[-1]
    low, high = np.maximum(0, low - 1 / breaks), np.minimum(1, high + 1 / breaks)
    drawn = np.cumsum(x)
    t = np.arange(1, t_max + 1)
    return np.maximum(low, drawn / population), np.minimum(high, 1 - (t - drawn) / population)


def _population(kind, size, seed):
    rng = np.random.default_rng(seed)
    if kind == "skewed":  # per-image CIDEr-D / 10: mostly near 0, a long tail
        return np.clip(rng.gamma(0.4, 0.08, size), 0, 1)
    return np.clip(0.5 + 0.02 * rng.standard_t(3, size), 0, 1)  # paired differences rescaled


@pytest.mark.parametrize("kind, population, draws, alpha", [
    ("skewed", 60, 40, 0.05), ("differences", 300, 60, 0.01), ("skewed", 80, 80, 0.2)])
def test_two_sided_matches_the_transcribed_algorithm_within_its_grid(kind, population, draws, alpha):
    x = np.random.default_rng(1).permutation(_population(kind, population, 0))[:draws]
    low, high = _transcribed(x, population, alpha)
    mine_low, mine_high = confseq.two_sided(x, population, alpha)
    # the grid widens by one step: its bounds enclose the exact ones, at most one step away
    assert np.all(mine_low[0] >= low - 1e-12) and np.all(mine_high[0] <= high + 1e-12)
    assert np.max(mine_low[0] - low) <= 1 / BREAKS + 1e-9 and np.max(high - mine_high[0]) <= 1 / BREAKS + 1e-9


def test_one_sided_upper_matches_the_transcribed_algorithm_within_its_grid():
    x = np.random.default_rng(2).permutation(_population("differences", 200, 3))[:50]
    _, high = _transcribed(x, 200, 0.02, theta=0.0)  # theta 0: the negative capital alone, at alpha
    mine = confseq.one_sided(x, 200, 0.02, side="upper")[0]
    assert np.all(mine <= high + 1e-12) and np.max(high - mine) <= 1 / BREAKS + 1e-9


def test_matches_confseq_where_it_installs():
    betting = pytest.importorskip("confseq.betting")  # needs Boost headers to build: absent on most machines
    x = np.random.default_rng(3).permutation(_population("skewed", 500, 4))[:120]
    low, high = betting.betting_cs(x, alpha=0.05, N=500, breaks=BREAKS)
    mine_low, mine_high = confseq.two_sided(x, 500, 0.05)
    assert np.max(np.abs(mine_low[0] - low)) <= 1 / BREAKS + 1e-9
    assert np.max(np.abs(mine_high[0] - high)) <= 1 / BREAKS + 1e-9


def test_the_whole_population_drawn_gives_its_mean_and_the_bounds_nest_in_the_logical_ones():
    population = _population("skewed", 50, 5)
    x = np.random.default_rng(6).permutation(population)
    low, high = confseq.two_sided(x, 50, 0.05)
    assert low[0, -1] == pytest.approx(population.mean(), abs=1e-12) == high[0, -1]
    logical_low, logical_high = confseq.logical_bounds(x[None], 50, np.arange(1, 51))
    assert np.all(low >= logical_low - 1e-12) and np.all(high <= logical_high + 1e-12) and np.all(low <= high)


def test_coverage_holds_at_every_look_at_once():
    # 400 random orders of one skewed population; a miss is any look whose interval excludes the mean
    population = _population("skewed", 400, 7)
    rng = np.random.default_rng(8)
    draws = np.stack([rng.permutation(population)[:120] for _ in range(400)])
    looks = np.array([8, 16, 24, 32, 48, 64, 96, 120])
    low, high = confseq.two_sided(draws, 400, 0.1, looks)
    missed = ((low > population.mean()) | (high < population.mean())).any(1)
    assert missed.mean() <= 0.1  # nominal 0.1; the betting sequence is conservative (about 0.01 here)


def test_rows_take_their_own_levels_and_rescaling_round_trips():
    x = np.random.default_rng(9).permutation(_population("differences", 100, 10))[:40]
    both = confseq.one_sided(np.stack([x, x]), 100, np.array([0.2, 0.001]), side="upper")
    assert np.all(both[0] <= both[1] + 1e-12) and np.any(both[0] < both[1])
    d = np.array([-10.0, 0.0, 3.5, 10.0])
    assert np.allclose(confseq.difference_from_unit(confseq.difference_to_unit(d, (0, 10)), (0, 10)), d)
    assert np.allclose(confseq.difference_to_unit(d, (0, 10)), [0, 0.5, 0.675, 1])
    assert np.allclose(confseq.from_unit(confseq.to_unit([0, 2.5, 10], (0, 10)), (0, 10)), [0, 2.5, 10])
