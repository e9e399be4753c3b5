"""Racing (ranking.racing): budget kept, paired drops, the pick, and the error rate on known scores."""
import numpy as np
import pytest

from pregen_jax.ranking.racing import RaceSettings, race, race_table, round_sizes


def _matrix(means, images=2000, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 0.5, images)  # shared per-image effect: what pairing removes
    return np.array([m + difficulty + rng.normal(0, noise, images) for m in means])


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
    matrix = _matrix([1.0, 0.5, 1.3, 0.2])
    result = race_table(matrix, RaceSettings(budget=0.25, seed=1))
    assert result.picked == 2
    table = result.table.set_index("candidate")
    assert table.loc["3", "status"].startswith("dropped in round")
    assert table.loc["2", "picked"] and table["picked"].sum() == 1
    # every survivor was scored on the same images as the pick
    assert (table.loc[table.status == "not separated", "images_scored"] == table.loc["2", "images_scored"]).all()


def test_pairing_separates_what_unpaired_means_cannot():
    # differences of 0.05 under a per-image spread of 0.5: paired differences have sd 0.1*sqrt(2)
    matrix = _matrix([1.0, 0.95], images=4000, noise=0.1)
    result = race_table(matrix, RaceSettings(budget=0.5, seed=0))
    assert result.picked == 0 and result.table.loc[1, "status"].startswith("dropped")


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


@pytest.mark.parametrize("bad", [dict(budget=0), dict(budget=1.5), dict(confidence=1.0), dict(seed=-1)])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        RaceSettings(**bad)


def _features(matrix, noise, seed=0):
    """Per-image features that predict each candidate's per-image score up to ``noise``: f[M, I, 1]."""
    rng = np.random.default_rng(seed)
    return (matrix + rng.normal(0, noise, matrix.shape))[..., None]


def test_zero_features_give_the_plain_race_with_the_fpc():
    matrix = _matrix([1.0, 0.5, 1.3, 0.2])
    plain = race_table(matrix, RaceSettings(budget=0.25, seed=1))
    assisted = race_table(matrix, RaceSettings(budget=0.25, seed=1), features=np.zeros(matrix.shape + (1,)))
    assert assisted.picked == plain.picked == 2
    table = assisted.table
    assert np.allclose(table["estimate"], table["plain_estimate"]) and np.allclose(table["variance_ratio"], 1.0)
    assert (table["high"] - table["low"] <= plain.table["high"] - plain.table["low"] + 1e-12).all()  # the FPC


def test_a_good_predictor_narrows_the_race():
    # differences of 0.05 hidden under per-model per-image noise that the features predict
    matrix = _matrix([1.0, 0.95, 0.9], images=2000, noise=0.4, seed=2)
    settings = RaceSettings(budget=0.1, seed=0)
    plain = race_table(matrix, settings)
    assisted = race_table(matrix, settings, features=_features(matrix, 0.05))
    assert assisted.assist["r2_pairs"] > 0.8 and assisted.assist["variance_ratio_pairs"] > 5
    assert assisted.picked == 0
    assert len(assisted.not_separated) < 1 + len(plain.not_separated)


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
