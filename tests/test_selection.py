"""Selecting checkpoints during training by a pre-gen metric: criteria, history, best epoch,
early stopping, resume, and one-line errors for a bad criterion."""
import jax
import numpy as np
import pytest

from pregen_jax import RefProbs, tiers
from pregen_jax.captioning import criteria, evaluate
from pregen_jax.captioning import train as training
from pregen_jax.captioning.models import RnnConfig
from pregen_jax.datasets import Vocabulary
from pregen_jax.pipeline import SearchConfig
from pregen_jax.settings import build
from pregen_jax.training import checkpoints

TINY = RnnConfig(embed_size=12, hidden_size=16, image_size=8, dropout=0.5)
VOCAB = Vocabulary(["a", "red", "blue", "box", "ball", "above"])
WINNER_2018 = "mean_max_normcount_prefix0"


def toy_data(seed=4, images=30, features=10):
    rng = np.random.default_rng(seed)
    words = ["a", "red", "blue", "box", "ball", "above"]
    captions = [[list(rng.choice(words, rng.integers(2, 7))) for _ in range(rng.integers(1, 4))]
                for _ in range(images)]
    return rng.normal(size=(images, features)).astype(np.float32), captions


def train(workdir, epochs=3, **overrides):
    features, captions = toy_data()
    config = training.TrainConfig(**{"epochs": epochs, "batch_size": 8, "patience": epochs,
                                     "snapshot_epochs": list(range(1, epochs + 1)), **overrides})
    return training.train_captioner("merge", TINY, config, 0, VOCAB, features, captions, features[:10],
                                    captions[:10], workdir, progress=False)


# ------------------------------------------------------------------ criteria


@pytest.mark.parametrize("name, higher", [
    ("perplexity", False), (WINNER_2018, True), ("geomean_join_pplx_none", False),
    ("sum_mean_prob_none", True), ("mean_mean_count_filter0", True), ("median_min_normcount_miss0", False),
    ("mean_mean_prob_filter0", None), ("mean_mean_pplx_prefix0", None)])
def test_direction_follows_from_the_tiers_where_it_can(name, higher):
    assert criteria.inferred_direction(name) is higher


def test_criterion_directions_and_their_errors():
    assert criteria.Criterion.make(WINNER_2018) == criteria.Criterion(WINNER_2018, True)
    assert criteria.Criterion.make("mean_mean_prob_filter0", "lower").higher_is_better is False
    with pytest.raises(ValueError, match="direction does not follow from its tiers; set direction"):
        criteria.Criterion.make("mean_mean_prob_filter0")
    with pytest.raises(ValueError, match="perplexity falls as quality rises"):
        criteria.Criterion.make("perplexity", "higher")
    with pytest.raises(ValueError, match="depends on the reference lengths only"):
        criteria.Criterion.make("mean_mean_normcount_none")


def test_criterion_picks_and_improvements():
    lower, higher = criteria.Criterion("perplexity", False), criteria.Criterion(WINNER_2018, True)
    assert lower.best_index([5.0, 3.0, 3.0, np.nan]) == 1       # first of ties, NaN never best
    assert higher.best_index([np.nan, 0.2, 0.7, 0.7]) == 2
    assert lower.improves(3.0, lower.worst) and higher.improves(0.1, higher.worst)
    assert not lower.improves(3.0, 3.0) and not higher.improves(float("nan"), 0.1)


def test_named_metrics_equal_the_full_sweep():
    rng = np.random.default_rng(0)
    mask = np.arange(6) < rng.integers(2, 7, (5, 3))[..., None]
    ranks = np.where(rng.random(mask.shape) < 0.5, 0, rng.integers(1, 9, mask.shape)) * mask
    ref_probs = RefProbs(rng.uniform(0.01, 1, mask.shape) * mask, ranks, mask)
    names = [WINNER_2018, "geomean_join_pplx_none", "sum_median_count_filter0"]
    space, columns = criteria.metric_space(names)
    assert len(space) == 3 * 3 * 3 * 3 and [space.names[c] for c in columns] == names
    full = tiers.sweep(ref_probs)[0]
    values = criteria.pregen_values(ref_probs, names)
    for name in names:
        assert values[name] == pytest.approx(float(full[tiers.DEFAULT_SPACE.names.index(name)]), rel=1e-6)
    # Hand-checked: the winner is the mean over images of the best reference's share of positions
    # before the first miss.
    keep = np.cumsum(mask & (ranks != 0), -1) == 0
    by_hand = (np.sum(keep & mask, -1) / mask.sum(-1)).max(1).mean()
    assert values[WINNER_2018] == pytest.approx(by_hand, rel=1e-6)


# ------------------------------------------------------------------ configuration


@pytest.mark.parametrize("values, message", [
    ({"select_by": "mean_max_normcount_prefx0"}, "select_by 'mean_max_normcount_prefx0' is neither 'perplexity' "
                                                 "nor a pre-gen metric name"),
    ({"select_by": "mean_mean_prob_prefix0"}, "set direction"),
    ({"select_by": "perplexity", "direction": "higher"}, "perplexity falls as quality rises"),
    ({"monitor": ["nosuch"]}, "monitor 'nosuch' is neither"),
    ({"direction": "up"}, "direction = 'up'"),
])
def test_a_bad_criterion_is_a_one_line_error(values, message):
    with pytest.raises(ValueError, match=message) as err:
        build(training.TrainConfig, values, "search.toml", "training")
    assert "\n" not in str(err.value) and str(err.value).startswith("search.toml: [training] ")
    with pytest.raises(ValueError, match=message):
        SearchConfig.from_dict({"training": values}, "search.toml")


def test_default_selection_fields_leave_checkpoint_records_as_before():
    config = training.TrainConfig(epochs=3)
    old = {k: v for k, v in training.as_dict(config).items() if k not in ("select_by", "direction", "monitor")}
    assert config.record() == old
    chosen = training.TrainConfig(epochs=3, select_by=WINNER_2018)
    assert chosen.record()["select_by"] == WINNER_2018 and "monitor" not in chosen.record()
    assert chosen.pregen_metrics == [WINNER_2018]
    assert training.TrainConfig(monitor=["geomean_join_pplx_none"]).pregen_metrics == ["geomean_join_pplx_none"]


# ------------------------------------------------------------------ training


def test_training_selects_the_best_epoch_by_a_pregen_metric(tmp_path):
    trained = train(tmp_path, epochs=3, select_by=WINNER_2018, monitor=["geomean_join_pplx_none"])
    history = trained.history
    assert [h["epoch"] for h in history] == [1, 2, 3]
    for h in history:
        assert set(h) >= {WINNER_2018, "geomean_join_pplx_none", "val_perplexity", "eval_seconds"}
        assert h["eval_seconds"] > 0
    values = [h[WINNER_2018] for h in history]
    best_epoch = 1 + int(np.argmax(values))
    _, meta = checkpoints.load(trained.path)
    assert meta["epoch"] == best_epoch
    snapshot, _ = checkpoints.load(tmp_path / f"snapshot-epoch{best_epoch}.msgpack")
    final, _ = checkpoints.load(trained.path)
    jax.tree_util.tree_map(np.testing.assert_array_equal, final["params"], snapshot["params"])
    # The logged value is the metric of that epoch's parameters on the validation split.
    features, captions = toy_data()
    ref_probs = evaluate.reference_probs(trained.model, trained.params, features[:10], captions[:10], VOCAB,
                                         progress=False, warn_unknown=False)
    recomputed = criteria.pregen_values(ref_probs, [WINNER_2018, "geomean_join_pplx_none"])
    assert recomputed[WINNER_2018] == pytest.approx(values[best_epoch - 1], rel=1e-5)
    assert evaluate.perplexity(ref_probs) == pytest.approx(history[best_epoch - 1]["val_perplexity"], rel=1e-5)


def scripted_validation(monkeypatch, values, name=WINNER_2018):
    """Replace the epoch's evaluation by the given criterion values, one per epoch."""
    calls = iter(values)

    def validate(*args):
        value = next(calls)
        return criteria.Validation(perplexity=10.0, pregen={name: value}, seconds=0.5, pregen_seconds=0.1)
    monkeypatch.setattr(training, "validate", validate)


@pytest.mark.parametrize("direction, stops_after, best", [("higher", 4, 2), ("lower", 6, 6)])
def test_early_stopping_follows_the_criterion(tmp_path, monkeypatch, direction, stops_after, best):
    # higher: 0.7 at epoch 2 is not beaten by 0.45, 0.65 -> stop after epoch 4 (patience 2);
    # lower: epochs 1, 3, 5 and 6 improve, never two bad epochs in a row -> all 6 run.
    scripted_validation(monkeypatch, [0.5, 0.7, 0.45, 0.65, 0.44, 0.3], "mean_mean_prob_filter0")
    trained = train(tmp_path, epochs=6, patience=2, select_by="mean_mean_prob_filter0", direction=direction,
                    snapshot_epochs=[])
    assert len(trained.history) == stops_after
    _, meta = checkpoints.load(trained.path)
    assert meta["epoch"] == best


def test_resume_with_a_pregen_criterion_gives_identical_parameters(tmp_path, crash_on):
    straight = train(tmp_path / "a", epochs=2, select_by=WINNER_2018)
    with crash_on(training, "validate"), pytest.raises(KeyboardInterrupt):
        train(tmp_path / "b", epochs=2, select_by=WINNER_2018)
    resumed = train(tmp_path / "b", epochs=2, select_by=WINNER_2018)
    jax.tree_util.tree_map(np.testing.assert_array_equal, straight.params, resumed.params)
    assert [h[WINNER_2018] for h in resumed.history] == [h[WINNER_2018] for h in straight.history]
    # Another criterion is another training run: the checkpoint refuses to mix them.
    (tmp_path / "b" / "model.msgpack").unlink()
    with pytest.raises(ValueError, match="different train config"):
        train(tmp_path / "b", epochs=2)


def test_the_epoch_line_shows_the_criterion_and_the_cost():
    validation = criteria.Validation(4.2101, {WINNER_2018: 0.61234, "geomean_join_pplx_none": 3.9}, 0.414)
    assert training.epoch_line("merge-1", 3, validation, WINNER_2018, True) == (
        "merge-1 epoch 3: val perplexity 4.210, mean_max_normcount_prefix0 0.6123 (best), "
        "geomean_join_pplx_none 3.9, eval 0.41 s")
    assert training.epoch_line("", 1, criteria.Validation(4.2101, {}, 0.5), "perplexity", True) == (
        "epoch 1: val perplexity 4.210 (best), eval 0.50 s")


# ------------------------------------------------------------------ the study (experiments/model_selection)


def _compare_module(name="compare"):
    import importlib.util
    import sys
    from pathlib import Path
    path = Path(__file__).resolve().parents[1] / "experiments" / "model_selection" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"model_selection_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_study_early_stopping_matches_training():
    compare = _compare_module()
    assert compare.early_stop([0.5, 0.7, 0.45, 0.65, 0.44, 0.3], +1, 2) == (4, 2)   # as the training test above
    assert compare.early_stop([0.5, 0.7, 0.45, 0.65, 0.44, 0.3], -1, 2) == (6, 6)
    assert compare.early_stop([3.0, 2.0], -1, 2) == (2, 2)
    assert compare.early_stop([np.nan, 1.0, 0.5, 0.4], +1, 2) == (4, 2)


def test_study_criterion_scores_by_hand():
    compare = _compare_module()
    # Two runs of 3 epochs; the criterion is perplexity-like (lower is better).
    cider = np.array([0.1, 0.3, 0.2, 0.05, 0.4, 0.35])
    ppl = np.array([9.0, 5.0, 6.0, 8.0, 4.0, 3.0])
    significant = np.zeros((6, 6), bool)
    significant[0, 1] = significant[4, 5] = True
    checkpoints = compare.Checkpoints([f"m{k}" for k in range(6)], ["a"] * 3 + ["b"] * 3, np.array([1, 2, 3] * 2),
                                      cider, significant)
    row, stops = compare.evaluate_criterion(checkpoints, ppl, -1.0, patience=2)
    # 15 pairs, two discordant: m0 vs m3 (CIDEr .1 > .05 but perplexity 9 > 8) and m4 vs m5
    # (.4 > .35 but 4 > 3); of the two significant pairs, m0 vs m1 is concordant, m4 vs m5 not.
    assert row["pairs"] == 15 and row["pairwise_accuracy"] == pytest.approx(13 / 15)
    assert row["kendall_tau"] == pytest.approx(11 / 15)
    assert row["significant_pairs"] == 2 and row["significant_pairwise_accuracy"] == pytest.approx(0.5)
    assert row["picked"] == "m5" and row["regret_at_1"] == pytest.approx(0.05)
    assert row["regret_at_1_percent"] == pytest.approx(12.5)
    assert row["top5_overlap"] == pytest.approx(0.8)      # m0 (CIDEr's 5th) is perplexity's 6th
    assert [(s["stop_epoch"], s["chosen_epoch"], s["cider_lost"]) for s in stops] == [
        (3, 2, 0.0), (3, 3, pytest.approx(0.05))]


def test_study_cheap_criteria_on_known_per_image_scores():
    cheap = _compare_module("cheap")
    rng = np.random.default_rng(0)
    # 6 checkpoints x 400 images; checkpoint 4 is clearly best, 0 and 1 clearly worst.
    means = np.array([0.2, 0.25, 0.6, 0.62, 0.9, 0.5])
    per_image = np.clip(means[:, None] + rng.normal(0, 0.2, (6, 400)), 0, None)
    cider = per_image.mean(1)
    chosen = {c["label"]: c for c in cheap.cheap_criteria(per_image, 10.0, prior=-cider, races=5)}
    assert list(chosen) == ["CIDEr on 5%", "CIDEr on 10%", "CIDEr on 25%",
                            "racing at 5%", "racing at 10%", "racing at 25%"]
    images = cheap.subset_images(400, 0.10, 0)
    assert len(images) == 40 and np.allclose(chosen["CIDEr on 10%"]["values"], per_image[:, images].mean(1))
    assert chosen["CIDEr on 25%"]["seconds"] == pytest.approx(2.5)  # its share of full CIDEr's 10 s
    for budget in ("5%", "10%", "25%"):
        race = chosen[f"racing at {budget}"]
        assert int(np.argmax(race["values"])) == 4     # the pick ranks first
        assert race["stats"]["p_best_dropped"] == 0 and race["stats"]["mean_regret_percent"] == 0
        assert race["stats"]["cost_share"] <= float(budget[:-1]) / 100 + 1e-9
    # dropped checkpoints rank below those still racing; the worst pair leaves first
    values = chosen["racing at 25%"]["values"]
    assert values[[0, 1]].max() < values[[2, 3, 5]].min()
    # the level is chosen on held-out models: with a clear best, the lowest level keeps it
    level, rows = cheap.calibrate_confidence(per_image, races=3)
    assert level == 0.5 and len(rows) == 9 and all(r["p_best_dropped"] == 0 for r in rows)
