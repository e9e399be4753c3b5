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
