"""Racing (ranking.racing): budget kept, paired drops, the pick, intervals that hold at every
round, and the error rates on known scores (per-image scores inside CIDEr-D's [0, 10])."""
import numpy as np
import pytest

from pregen_jax.ranking.racing import ASSIST_DROPPED, RaceSettings, race, race_table, round_sizes


def _matrix(means, images=2000, noise=0.3, seed=0, spread=0.5):
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, spread, images)  # shared per-image effect: what pairing removes
    return np.clip(np.array([m + difficulty + rng.normal(0, noise, images) for m in means]), 0, 10)


def _skewed(means, images=600, seed=0):
    """Per-image scores shaped like CIDEr-D's: mostly small, a long tail, shared by the candidates."""
    rng = np.random.default_rng(seed)
    base = rng.gamma(0.5, 1.0, images)
    return np.clip(np.array([m * base + rng.normal(0, 0.1, images) for m in means]), 0, 10)


def test_round_sizes_double_and_fit_the_budget():
    sizes = round_sizes(1000, 10, 0.1)
    assert sizes[0] >= 16 and all(b == 2 * a or b == 1000 for a, b in zip(sizes, sizes[1:]))
    assert sizes[0] * 10 <= 0.1 * 1000 * 10


def test_budget_is_never_exceeded_and_lookups_are_counted():
    matrix = _matrix([1.0, 1.0, 1.0, 1.0])  # nobody separable: the race runs to its budget
    calls = []

    def score(c, idx):
        calls.append(len(idx))
        return matrix[c, idx]
    result = race(score, 4, 2000, RaceSettings(budget=0.1, seed=3))
    assert sum(calls) == result.images_scored <= 0.1 * 4 * 2000
    assert result.table["images_scored"].sum() == result.images_scored


def test_a_clearly_worse_candidate_is_dropped_and_the_best_picked():
    matrix = _matrix([6.0, 4.5, 7.0, 2.0])
    result = race_table(matrix, RaceSettings(budget=0.25, seed=1))
    assert result.picked == 2
    table = result.table.set_index("candidate")
    assert table.loc["3", "status"].startswith("dropped in round")
    assert table.loc["2", "picked"] and table["picked"].sum() == 1
    # every survivor was scored on the same images as the pick
    assert (table.loc[table.status == "not separated", "images_scored"] == table.loc["2", "images_scored"]).all()


def test_pairing_separates_what_unpaired_means_cannot():
    # a difference of 0.5 under a per-image spread of 2: the candidates' intervals overlap, but
    # the paired differences (sd 0.05 * sqrt(2)) are far from zero
    matrix = _matrix([5.0, 4.5], images=4000, noise=0.05, spread=2.0)
    result = race_table(matrix, RaceSettings(budget=0.5, seed=0))
    assert result.picked == 0 and result.table.loc[1, "status"].startswith("dropped")
    assert result.table.loc[1, "high"] > result.table.loc[0, "low"]


def test_prior_breaks_ties_and_is_reported():
    matrix = np.ones((3, 100))
    result = race_table(matrix, RaceSettings(budget=0.5), prior=[3.0, 1.0, 2.0])
    assert result.picked == 1
    assert list(result.table["prior_rank"]) == [3, 1, 2]


def test_the_split_best_is_dropped_less_often_than_alpha():
    # Five candidates equal in expectation: the one best on the whole split is what a drop must
    # not lose (dropping a candidate that is worse on the split is no error).
    lost = 0
    for seed in range(60):
        matrix = _matrix([1.0] * 5, images=1000, seed=seed)
        result = race_table(matrix, RaceSettings(budget=0.3, seed=seed, confidence=0.9))
        best = int(matrix.mean(1).argmax())
        lost += result.table["status"].iloc[best].startswith("dropped")
    assert lost / 60 <= 0.1


@pytest.mark.parametrize("bad", [dict(budget=0), dict(budget=1.5), dict(confidence=1.0), dict(seed=-1),
                                 dict(assist="pregen")])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        RaceSettings(**bad)


def test_assisted_races_are_refused_with_the_reason():
    matrix = _matrix([1.0, 0.5])
    with pytest.raises(ValueError, match="no confidence sequence valid at every look"):
        race_table(matrix, RaceSettings(), features=np.zeros(matrix.shape + (1,)))
    with pytest.raises(ValueError) as err:
        RaceSettings(assist="both")
    assert ASSIST_DROPPED in str(err.value)


def test_scores_outside_the_metric_range_are_refused():
    matrix = _matrix([1.0, 0.5])
    matrix[1, :] = 10.5
    with pytest.raises(ValueError, match="candidate 1: score 10.5 outside the metric's range"):
        race_table(matrix, RaceSettings(budget=1.0), score_range=(0.0, 10.0))
    in_unit = _matrix([0.6, 0.3], noise=0.05, spread=0.1)  # ROUGE-L-like scores, in [0, 1]
    assert race_table(in_unit, RaceSettings(budget=0.2), score_range=(0.0, 1.0)).picked == 0


def test_every_interval_holds_at_every_round_and_narrows():
    # skewed scores, the race's own intervals after each round against each candidate's split mean
    missed = 0
    for seed in range(40):
        matrix = _skewed([1.0, 0.9, 0.8, 0.5, 0.3], seed=seed)
        result = race_table(matrix, RaceSettings(budget=0.5, seed=seed, confidence=0.8))
        truth = matrix.mean(1)
        low, high = result.intervals[..., 0], result.intervals[..., 1]
        missed += bool(((low > truth) | (high < truth)).any())
        assert np.all(np.diff(high - low, axis=0) <= 1e-12)  # intersected over the rounds
        assert np.allclose(result.intervals[-1], result.table[["low", "high"]].to_numpy())
    assert missed / 40 <= 0.2
    assert result.alpha_per_test == pytest.approx(0.2 / 10) and result.alpha_drop == pytest.approx(0.2 / 2)
    assert result.alpha_within == pytest.approx(0.2 / 2 / 4)


def test_the_whole_split_gives_exact_intervals():
    matrix = _skewed([1.0, 0.98], images=64)  # too close to separate on 32 of the 64 images
    result = race_table(matrix, RaceSettings(budget=1.0, seed=0))
    # sampled without replacement, the whole split leaves nothing unknown: the answer is exact (issue 57)
    assert result.rounds == [16, 32, 64] and result.exact and result.not_separated == [] and result.within == 0
    assert list(result.table["status"]) == ["picked", "below the pick on these images"]
    assert np.allclose(result.table["low"], matrix.mean(1)) and np.allclose(result.table["high"], matrix.mean(1))


def test_screened_candidates_are_never_scored_and_the_budget_holds():
    matrix = _matrix([1.0, 0.5, 1.3, 0.2, 0.9, 1.1])
    asked = set()

    def score(c, idx):
        asked.add(c)
        return matrix[c, idx]
    result = race(score, 6, 2000, RaceSettings(budget=0.1, seed=0), prior=[3, 6, 1, 5, 4, 2], screen=3)
    assert asked == {2, 5, 0}
    assert (result.table.loc[[1, 3, 4], "status"] == "screened out").all()
    assert result.images_scored <= 0.1 * 6 * 2000 and result.assist["screened"] == 3
    assert result.picked == 2


def test_the_coverage_study_replays_both_races_on_the_same_seeds():
    # experiments/model_selection/race_coverage.py: a checkpoint that scores 0 on all but a few
    # images gets a zero-width t interval at 0 that misses its split mean; the sequences cover it
    import importlib.util
    import sys
    from pathlib import Path
    folder = Path(__file__).resolve().parents[1] / "experiments" / "model_selection"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("race_coverage", folder / "race_coverage.py")
        study = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(study)
    finally:
        sys.path.remove(str(folder))
    matrix = _skewed([1.0, 0.9, 0.8], images=300)
    matrix[2] = 0.0
    matrix[2, :3] = 5.0  # whole-split mean 0.05; 3 of 300 images
    rows = {(r["method"], r["budget"], r["level"]): r for r in study.grid_rows("toy", matrix, None, races=6)}
    assert len(rows) == 8
    for budget in study.BUDGETS:
        for level in study.LEVELS:
            t_bound, sequences = rows["t bound", budget, level], rows["confidence sequence", budget, level]
            assert sequences["covered_all_rounds"] == 1.0 and sequences["p_missed_flat"] == 0.0
            assert t_bound["covered_all_rounds"] < 1.0 and t_bound["p_missed_flat"] > 0
            assert sequences["width_first"] > t_bound["width_first"]
