"""Pre-gen unit tests (`pregen-search unit-tests`): the corruptions on tiny models, the pass rules on
hand-made scores, and the command on a tiny trained search (with the search report's section and
`rank --unit-tests`)."""
import re
import shutil

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from pregen_jax import cli, tiers
from pregen_jax.captioning import decode
from pregen_jax.captioning import train as training
from pregen_jax.captioning.models import RNN_ARCHITECTURES, Captioner, RnnConfig
from pregen_jax.meta import model_corruptions as mc
from pregen_jax.meta import model_tests, model_tests_report
from pregen_jax.pipeline.finished import FinishedSearch
from tests.builders import training_config, write_config, write_precomputed, write_training_corpus

TINY = {"embed_size": 12, "hidden_size": 16, "image_size": 8}
FEATURES, VOCAB_SIZE = 10, 9


def tiny_model(arch, seed=0):
    model = Captioner(arch, RnnConfig(**TINY), VOCAB_SIZE)
    return model, training.init_params(model, FEATURES, seed)


def features(images=6, seed=0, scale=3.0):
    return np.random.default_rng(seed).normal(size=(images, FEATURES)).astype(np.float32) * scale


# ------------------------------------------------------------------ corruptions


@pytest.mark.parametrize("arch", RNN_ARCHITECTURES)
def test_temperature_by_kernel_scaling_is_logits_over_t(arch):
    model, params = tiny_model(arch)
    inputs = jnp.asarray(np.random.default_rng(1).integers(0, VOCAB_SIZE, (6, 7)), jnp.int32)
    logits = np.asarray(decode.teacher_forced_logits(model, params, features(), inputs))
    for t in mc.TEMPERATURES:  # powers of two: exact
        scaled = decode.teacher_forced_logits(model, mc.scale_temperature(params, t), features(), inputs)
        np.testing.assert_array_equal(np.asarray(scaled), logits / np.float32(t))
    scaled = decode.teacher_forced_logits(model, mc.scale_temperature(params, 3.0), features(), inputs)
    np.testing.assert_allclose(np.asarray(scaled), logits / 3.0, rtol=1e-5, atol=1e-6)
    # Only the output layer changes; the original parameters are left alone.
    scaled = mc.scale_temperature(params, 2.0)
    assert scaled["params"]["cell"] is params["params"]["cell"]
    np.testing.assert_array_equal(params["params"]["out"]["bias"], 2.0 * scaled["params"]["out"]["bias"])
    with pytest.raises(ValueError, match="temperature must be positive"):
        mc.scale_temperature(params, 0.0)


@pytest.mark.parametrize("arch", RNN_ARCHITECTURES)
def test_temperature_leaves_greedy_captions_unchanged(arch):
    model, params = tiny_model(arch, seed=3)
    greedy = np.asarray(decode.greedy(model, params, features(8, seed=4), 10, 2))
    assert len({tuple(row) for row in greedy}) > 1  # the model says different things about different images
    for t in (*mc.TEMPERATURES, 0.1, 7.0):
        np.testing.assert_array_equal(np.asarray(decode.greedy(model, mc.scale_temperature(params, t),
                                                               features(8, seed=4), 10, 2)), greedy)


def test_shuffled_images_permute_features_with_no_image_keeping_its_own():
    rows = features(50, seed=5)
    perm = mc.derangement(50, [0, 7])
    assert sorted(perm) == list(range(50)) and not (perm == np.arange(50)).any()
    np.testing.assert_array_equal(mc.derangement(50, [0, 7]), perm)           # seeded
    assert (mc.derangement(50, [1, 7]) != perm).any()
    shuffled = mc.shuffle_features(rows, [0, 7])
    np.testing.assert_array_equal(shuffled, rows[perm])
    assert not (shuffled == rows).all(1).any()
    assert sorted(map(tuple, shuffled)) == sorted(map(tuple, rows))         # the same rows, moved
    assert sorted(mc.derangement(2, 0)) == [0, 1] and (mc.derangement(2, 0) == [1, 0]).all()
    with pytest.raises(ValueError, match="at least 2 images"):
        mc.derangement(1, 0)


def test_param_noise_is_seeded_and_scales_with_each_tensors_std():
    params = {"params": {"big": np.random.default_rng(0).normal(3.0, 2.0, (200, 300)).astype(np.float32),
                         "small": np.linspace(-0.01, 0.01, 5000).astype(np.float32),
                         "flat": np.full(7, 0.5, np.float32)}}
    noisy = {level: mc.add_param_noise(params, level, [0, 1]) for level in mc.NOISE_LEVELS}
    again = mc.add_param_noise(params, 0.1, [0, 1])
    for name in ("big", "small"):
        leaf = params["params"][name]
        np.testing.assert_array_equal(again["params"][name], noisy[0.1]["params"][name])
        assert (mc.add_param_noise(params, 0.1, [0, 2])["params"][name] != again["params"][name]).any()
        for level, tree in noisy.items():
            delta = tree["params"][name].astype(np.float64) - leaf
            assert tree["params"][name].dtype == np.float32
            assert np.std(delta) == pytest.approx(level * np.std(leaf), rel=0.05)
            assert abs(np.mean(delta)) < 0.1 * level * np.std(leaf)
        # One draw per tensor, scaled per level: the noise at 0.2 is twice the noise at 0.1.
        d1 = noisy[0.1]["params"][name].astype(np.float64) - leaf
        d2 = noisy[0.2]["params"][name].astype(np.float64) - leaf
        np.testing.assert_allclose(d2, 2 * d1, rtol=1e-3, atol=1e-6 * np.std(leaf))
    np.testing.assert_array_equal(noisy[0.2]["params"]["flat"], params["params"]["flat"])  # std 0: no noise


# ------------------------------------------------------------------ pass rules


def test_holds_the_15_percent_edge_signs_zeros_and_non_finite():
    s_a = [0.0, 1.0, 1.0, 100.0, 100.0, 100.0, 100.0, -100.0, -100.0, -100.0, 1e-12]
    s_b = [0.0, 1.0, 1.15, 115.0, 85.0, 115.01, 84.99, -115.0, -85.0, -116.0, 2e-12]
    assert mc.holds(s_a, s_b).tolist() == [True, True, True, True, True, False, False, True, True, False, True]
    # A negative metric is judged (MUTT's s_a + eps denominator would pass -100 vs +500).
    assert not mc.holds([-100.0], [500.0])[0]
    inf, nan = np.inf, np.nan
    assert mc.holds([inf, 1.0, inf, nan, 1.0, -inf], [inf, inf, 1.0, nan, nan, -inf]).tolist() == [False] * 6
    assert mc.holds(np.ones((2, 3)), np.full((2, 3), 1.1)).shape == (2, 3)


def test_gets_worse_follows_the_direction_ties_and_infinities():
    up, down = 1.0, -1.0
    s_a = np.array([2.0, 2.0, 2.0, 2.0, 2.0, np.inf, np.nan])
    s_b = np.array([1.0, 3.0, 2.0, np.inf, -np.inf, np.inf, 1.0])
    assert mc.gets_worse(s_a, s_b, up).tolist() == [True, False, False, False, True, False, False]
    assert mc.gets_worse(s_a, s_b, down).tolist() == [False, True, False, True, False, False, False]
    # Per-metric directions broadcast over models: f[M, C] with direction f[C].
    got = mc.gets_worse(np.zeros((2, 2)), np.array([[1.0, 1.0], [-1.0, -1.0]]), np.array([up, down]))
    assert got.tolist() == [[False, True], [True, False]]


def test_ordered_like_counts_only_cider_differences_and_fails_metric_ties():
    c_i, c_j = np.array([0.5, 0.5, 0.5, 0.5, 0.5]), np.array([0.4, 0.6, 0.5, 0.4, 0.4])
    m_i = np.array([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, np.nan]])
    m_j = np.array([[0.5, 2.0], [2.0, 0.5], [3.0, 3.0], [1.0, 1.0], [0.5, 0.5]])
    counted, passed = mc.ordered_like(m_i, m_j, c_i, c_j, np.array([1.0, -1.0]))
    assert counted.tolist() == [True, True, False, True, True]       # pair 3 is a CIDEr tie: no trial
    assert passed.tolist() == [[True, True], [True, True], [False, False], [False, False], [True, False]]


def scores(base, temp, shuffled, noise, cider):
    return model_tests.CorruptionScores(np.array(base, float), np.array(temp, float), np.array(shuffled, float),
                                   np.array(noise, float), np.array(cider, float), np.float64(0.0),
                                   np.array([True, True]))


def test_trial_table_on_hand_made_scores():
    names = ["up", "down", "unranked"]
    direction = {"up": 1.0, "down": -1.0}
    # Model 1: CIDEr falls with noise; "up" falls too, "down" rises except at 0.2 (tie with 0.1).
    one = scores([10, 5, 1], [[10.5, 5.9, 2], [9, 5, 1]], [8, 7, 1], [[9, 6, 1], [8, 7, 1], [7, 7, 1]],
                 [1.0, 0.9, 0.8, 0.7])
    # Model 2: noise 0.05 leaves CIDEr as it was (one pair less); shuffling helps "up".
    two = scores([-4, 2, np.inf], [[-4.2, 2, np.inf], [-3, 2, np.inf]], [-3, 1, 0], [[-5, 3, 0], [-6, 4, 0],
                                                                                      [-7, 5, 0]],
                 [0.5, 0.5, 0.4, 0.3])
    models = pd.DataFrame({"architecture": ["par"] * 4, "run": ["1", "1", "2", "2"],
                           "epoch": ["final", "1", "final", "1"], "CIDEr": [0.9, 0.5, 0.6, 0.6],
                           "up": [2.0, 1.0, 1.0, 1.0], "down": [1.0, 1.0, 3.0, 2.0]})
    frame = model_tests.trial_table(names, direction, [one, two], models)
    got = {(r.test, r.pregen): (r.trials, r.passed) for r in frame.itertuples()}
    assert got == {
        # |10.5-10|/10 ok, |9-10|/10 ok | 5.9 vs 5: 18% fails | 2 vs 1 fails, 1 vs 1 ok | model 2: 5% ok, 25% fails
        ("temperature", "up"): (4, 3), ("temperature", "down"): (4, 3), ("temperature", "unranked"): (4, 1),
        ("shuffled_images", "up"): (2, 1), ("shuffled_images", "down"): (2, 1),
        ("param_noise", "up"): (11, 11), ("param_noise", "down"): (11, 10),
        ("early_snapshot", "up"): (1, 1), ("early_snapshot", "down"): (1, 0)}  # run 2: CIDEr tie, no trial
    assert set(frame["kind"]) == {"meaning-preserving", "meaning-altering", "graded"}
    assert frame.loc[0, "accuracy"] == 75.0 and frame["tokenizer"].eq("alnum-lower").all()
    assert list(frame.columns) == list(model_tests.COLUMNS)


def test_fails_meaning_preserving_and_the_rank_flags():
    frame = pd.DataFrame({"test": ["temperature", "temperature", "temperature", "shuffled_images"],
                          "kind": ["meaning-preserving"] * 3 + ["meaning-altering"],
                          "pregen": ["a", "b", "c", "d"], "trials": [4, 4, 0, 4], "passed": [2, 1, 0, 0],
                          "accuracy": [50.0, 25.0, np.nan, 0.0]})
    assert model_tests_report.fails_meaning_preserving(frame) == {"a": False, "b": True}
    flagged = model_tests_report.flag_correlations({"CIDEr": pd.DataFrame({"pregen": ["b", "a", "d"]})}, frame)
    assert flagged["CIDEr"]["fails_meaning_preserving"].tolist() == [True, False, None]
    text = model_tests_report.rank_summary_section({"CIDEr": pd.DataFrame({"pregen": ["b", "a", "d"]})}, frame, "f")
    assert "1 of 2 tested metrics fail" in text and "`b` (rank 1)" in text and "1 untested" in text


# ------------------------------------------------------------------ the command on a tiny trained search


@pytest.fixture(scope="module")
def tiny_search(tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    write_training_corpus(folder)
    config = training_config(models={"architectures": ["par", "merge"]},
                             training={"epochs": 2, "snapshot_epochs": [1]}, postgen={"metrics": ["CIDEr"]})
    assert cli.main(["run", "--config", str(write_config(folder / "s.toml", config)), "--out",
                     str(folder / "run"), "--no-progress"]) == 0
    return folder / "run"


def unit_tests(search, out):
    return cli.main(["unit-tests", "--search", str(search), "--out", str(out)])


def test_unit_tests_on_a_tiny_search(tiny_search, tmp_path, capsys):
    out = tmp_path / "ut"
    assert unit_tests(tiny_search, out) == 0
    frame = pd.read_csv(out / "pregen_unit_tests.tsv", sep="\t")
    assert list(frame.columns) == list(model_tests.COLUMNS) and (out / "report.md").is_file()
    names = tiers.DEFAULT_SPACE.names
    ranked = pd.read_csv(tiny_search / "correlations_CIDEr.tsv", sep="\t")["pregen"]
    counts = frame.groupby("test")["pregen"].nunique()
    assert counts["temperature"] == len(names) and counts["shuffled_images"] == len(ranked)
    trials = frame.groupby("test")["trials"].max()
    assert trials["temperature"] == 2 * 4 and trials["shuffled_images"] == 4   # 2 archs x (final + epoch 1)
    assert trials["param_noise"] <= 6 * 4 and trials["early_snapshot"] <= 2
    # Temperature keeps every rank, so every count/normcount metric (and every filter) stays the same.
    temp = frame[frame["test"] == "temperature"].set_index("pregen")["accuracy"]
    rank_based = [n for n in names if tiers.parse_metric_name(n)[2] in ("count", "normcount")]
    finite = [n for n in rank_based if n in set(ranked)]
    assert finite and (temp[finite] == 100.0).all()
    report = (out / "report.md").read_text()
    assert "Greedy captions unchanged at every temperature for 4 of 4 models" in report
    assert "## Pass rates of the top metrics" in report and "alnum-lower" in report
    # The unchanged models' scores are the search's own (table.tsv, num_strata == 1).
    run = model_tests.run_unit_tests(tiny_search, out)
    assert run.cache_log["unit_tests"] == {"computed": 0, "reused": 4}
    table = pd.read_csv(tiny_search / "table.tsv", sep="\t")
    whole = table[table["num_strata"] == 1].reset_index(drop=True)
    for k, scores in enumerate(run.scores):
        keep = np.isfinite(scores.base) & np.isfinite(whole.loc[k, names].to_numpy(float))
        np.testing.assert_allclose(scores.base[keep], whole.loc[k, names].to_numpy(float)[keep], rtol=1e-5)
        assert scores.cider[0] == pytest.approx(whole.loc[k, "CIDEr"], rel=1e-6)


def test_unit_tests_in_the_run_folder_reach_the_search_report_and_rank(tiny_search, tmp_path):
    search = tmp_path / "run"
    shutil.copytree(tiny_search, search)
    finished = FinishedSearch.open(search)  # the manifest records trained models' files, decoding and vocabulary
    vocabulary = f"word-{len(finished.vocabulary)}"
    assert {(m.source, m.decoding, m.vocabulary) for m in finished.models} == {("trained", "beam 2", vocabulary)}
    assert all((search / m.files["model"]).is_file() and (search / m.files["refprobs"]).is_file()
               for m in finished.models)
    assert f"- Models' vocabulary: {vocabulary}" in (search / "report.md").read_text()
    assert unit_tests(search, search) == 0
    assert (search / "pregen_unit_tests.tsv").is_file() and (search / "table.tsv").is_file()
    report = (search / "report.md").read_text()
    assert report.count("## Pre-gen unit tests") == 1 and report.index("## Pre-gen unit tests") < report.index(
        "## Plots")
    assert "(perplexity baseline)" in report or "geomean_join_pplx_none" not in report
    # Rerunning the search (all cached) keeps the file and renders the section itself.
    assert cli.main(["run", "--config", str(search / "config.toml"), "--out", str(search), "--no-progress"]) == 0
    assert (search / "pregen_unit_tests.tsv").is_file()
    assert (search / "report.md").read_text().count("## Pre-gen unit tests") == 1
    assert cli.main(["rank", "--table", str(search / "table.tsv"), "--out", str(tmp_path / "rank"),
                     "--unit-tests", str(search / "pregen_unit_tests.tsv")]) == 0
    flagged = pd.read_csv(tmp_path / "rank" / "correlations_CIDEr.tsv", sep="\t")
    assert list(flagged.columns[-3:]) == ["fails_meaning_preserving", "tokenizer", "filter0"]
    assert flagged["filter0"].eq("top-choice").all()  # read from the search beside the table (issue 64)
    frame = pd.read_csv(search / "pregen_unit_tests.tsv", sep="\t")
    temp = frame[frame["test"] == "temperature"].set_index("pregen")["accuracy"]
    assert flagged["fails_meaning_preserving"].tolist() == (temp[flagged["pregen"]] < 50).tolist()
    assert "## Unit tests" in (tmp_path / "rank" / "summary.md").read_text()


@pytest.mark.parametrize("damage, message", [
    ("table", "table.tsv: missing, but manifest.json lists it: rerun the search"),
    ("model", "model.msgpack: corrupt or truncated checkpoint"),
    ("missing", "model.msgpack: the search's model par-1 is missing"),
    ("vocabulary", "vocabulary.json: changed since the search wrote it"),
])
def test_bad_input_is_one_line_naming_the_path(tiny_search, tmp_path, capsys, damage, message):
    search = tmp_path / "run"
    shutil.copytree(tiny_search, search)
    (model,) = (search / "cache" / "train").glob("par-1-*/model.msgpack")
    if damage == "table":
        (search / "table.tsv").unlink()
    elif damage == "model":
        model.write_bytes(model.read_bytes()[:100])
    elif damage == "missing":
        model.unlink()
    else:
        (search / "vocabulary.json").write_text('{"tokens": ["<edge>", "<unk>", "zebra"]}')
    assert unit_tests(search, tmp_path / "out") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pregen-search unit-tests: error: ")
    assert re.search(message, err), err
    assert not (tmp_path / "out").exists()


def test_rank_rejects_a_bad_unit_test_file(tiny_search, tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("test\tkind\tpregen\ttrials\tpassed\taccuracy\ntemperature\tmeaning-preserving\tx\t2\t3\t150\n")
    assert cli.main(["rank", "--table", str(tiny_search / "table.tsv"), "--out", str(tmp_path / "r"),
                     "--unit-tests", str(bad)]) == 2
    assert "bad.tsv, line 2: passed exceeds trials" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_search_of_precomputed_models_has_nothing_to_corrupt(tmp_path, capsys):
    config = write_precomputed(tmp_path, metrics=("CIDEr", "ROUGE_L"))
    assert cli.main(["run", "--config", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    capsys.readouterr()
    assert unit_tests(tmp_path / "run", tmp_path / "out") == 2
    assert "every model of the search is precomputed; nothing to corrupt" in capsys.readouterr().err
