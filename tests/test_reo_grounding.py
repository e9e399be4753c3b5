"""REO's grounding (issue 30): the generator's logical forms and which captions are true of which
images, padded object regions (mask = slice), the detector, the losses with false negatives
left out, retrieval measures against chance, and the specificity and decomposition tables."""
import dataclasses
import hashlib
import json

import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax import reo
from pregen_jax.datasets import Vocabulary, shapes
from pregen_jax.reo import regions as reo_regions
from pregen_jax.reo import retrieval, truth
from pregen_jax.reo import train as reo_train
from pregen_jax.reo.attention import pair_scores
from tests.conftest import experiment_module

SMALL = shapes.ShapesConfig(train=30, val=5, test=12, seed=3)
# sha256 of the pixels, labels and captions the generator made for SMALL before logical forms were recorded
GOLDEN = "73acd7e20c102d1fe3735a189fe3eea56f4fc45a9c3ee348a8f24a99e694f94e"


def test_forms_leave_the_generated_data_byte_identical_and_hold_where_they_should():
    dataset, scenes, forms = shapes.generate_with_forms(SMALL)
    digest = hashlib.sha256()
    for split in ("train", "val", "test"):
        digest.update(dataset[split].pixels.tobytes())
        digest.update(dataset[split].labels.tobytes())
        digest.update(json.dumps(dataset[split].captions).encode())
    assert digest.hexdigest() == GOLDEN
    for split in ("train", "test"):
        assert [len(f) for f in forms[split]] == [len(c) for c in dataset[split].captions]
        flat = [f for fs in forms[split] for f in fs]
        matrix = truth.truth_matrix(flat, scenes[split], chunk=7)
        oracle = np.array([[f.holds(s) for s in scenes[split]] for f in flat])
        np.testing.assert_array_equal(matrix, oracle)
        owner = np.repeat(np.arange(len(scenes[split])), SMALL.refs_per_image)
        assert matrix[np.arange(len(flat)), owner].all()      # every reference is true of its own image
        assert 0 < matrix.mean() < 0.5                         # and of some others, not all


def test_logical_forms_by_hand():
    a = shapes.Obj("circle", "red", "big", 0, 0, 8.0, 8.0, 7.0)
    b = shapes.Obj("square", "blue", "small", 2, 1, 24.0, 40.0, 4.0)
    scene = shapes.Scene([a, b], "striped")
    m = shapes.Mentioned
    assert shapes.ReferenceForm((m("circle", "red"),)).holds(scene)
    assert not shapes.ReferenceForm((m("circle", "blue"),)).holds(scene)
    assert shapes.ReferenceForm((m("circle"), m("square")), "above").holds(scene)
    assert not shapes.ReferenceForm((m("circle"), m("square")), "below").holds(scene)
    assert shapes.ReferenceForm((m("square"), m("circle")), "near").holds(scene)
    assert not shapes.ReferenceForm((m("circle"), m("circle"))).holds(scene)   # two distinct circles
    assert shapes.ReferenceForm((m(colour="blue"),), count=2).holds(scene)
    assert not shapes.ReferenceForm((m(colour="blue"),), count=3).holds(scene)
    assert not shapes.ReferenceForm((m("square", cell=4),)).holds(scene)
    assert shapes.ReferenceForm((m("square", size="small", cell=7),), background="striped").holds(scene)
    assert not shapes.ReferenceForm((), background="checkered").holds(scene)
    forms = [shapes.ReferenceForm((m("circle", "red", "big"),), background="striped"),
             shapes.ReferenceForm((m(colour="blue"),), count=2)]
    assert truth.reference_tuples(forms) == {("object", "circle"), ("colour", "circle", "red"),
                                             ("size", "circle", "big"), ("background", "striped")}


def test_batch_truth_is_the_truth_matrix_of_the_batch():
    _, scenes, forms = shapes.generate_with_forms(SMALL)
    fn = truth.batch_truth(forms["train"], scenes["train"])
    images, which = np.array([3, 0, 7, 12]), np.array([1, 4, 0, 2])
    expected = np.array([[forms["train"][images[c]][which[c]].holds(scenes["train"][i]) for c in range(4)]
                         for i in images])
    np.testing.assert_array_equal(fn(images, which), expected)


# ------------------------------------------------------------------------ regions


def test_padding_regions_are_skipped_mask_equals_slice():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(3, 4, 8)).astype(np.float32)
    words = rng.normal(size=(5, 6, 8)).astype(np.float32)
    mask = np.arange(6)[None] < np.array([6, 3, 4, 1, 5])[:, None]
    padded = np.concatenate([v, np.zeros((3, 2, 8), np.float32)], axis=1)
    np.testing.assert_allclose(pair_scores(padded, words, mask), pair_scores(v, words, mask), rtol=1e-5, atol=1e-6)
    cand, ground = rng.normal(size=(3, 4, 8)), rng.normal(size=(3, 4, 8))
    real = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]], bool)
    precision = np.eye(8)
    masked = reo.reo_from_context(jnp.asarray(cand), jnp.asarray(ground), precision, real)
    for n in range(3):
        k = real[n].sum()
        sliced = reo.reo_from_context(jnp.asarray(cand[n, :k]), jnp.asarray(ground[n, :k]), precision)
        for x, y in zip(masked, sliced):
            assert float(x[n]) == pytest.approx(float(y), rel=1e-6)


def test_box_regions_pool_the_covered_cells():
    features = np.arange(1 * 36 * 2, dtype=np.float32).reshape(1, 36 * 2)
    maps = features.reshape(36, 2)
    cell = 48 / 6
    boxes = np.zeros((1, 3, 4), np.float32)
    boxes[0, 0] = (cell, 0, 2 * cell, cell)              # exactly cell (row 0, col 1)
    boxes[0, 1] = (0, 0, 2 * cell, cell)                 # cells 0 and 1, equally
    regions = reo_regions.box_regions(features, boxes)
    assert regions.shape == (1, 4, 2)
    np.testing.assert_allclose(regions[0, 1], maps[1])
    np.testing.assert_allclose(regions[0, 2], (maps[0] + maps[1]) / 2)
    np.testing.assert_array_equal(regions[0, 3], 0)     # no third object: padding
    np.testing.assert_allclose(regions[0, 0], maps[2:].mean(axis=0), rtol=1e-6)  # background: the uncovered cells


def test_oracle_regions_and_a_tiny_detector(tmp_path):
    dataset, scenes, _ = shapes.generate_with_forms(SMALL)
    rng = np.random.default_rng(0)
    features = rng.random((len(scenes["train"]), 36 * 4)).astype(np.float32)
    oracle = reo_regions.regions_of("oracle", features, scenes["train"])
    counts = np.array([len(s.objects) for s in scenes["train"]])
    np.testing.assert_array_equal(np.any(oracle != 0, axis=-1).sum(axis=1), counts + 1)
    assert reo_regions.detection_quality(reo_regions.oracle_boxes(scenes["train"]), scenes["train"]) == \
        {"precision": 1.0, "recall": 1.0, "count_right": 1.0}
    detector = reo_regions.train_detector(features, scenes["train"], reo_regions.DetectorConfig(epochs=2,
                                                                                                batch_images=8))
    boxes = detector.boxes(features)
    assert boxes.shape == (len(features), 3, 4) and np.any(boxes[:, 0] != 0, axis=-1).all()  # at least one each
    reo_regions.save_detector(detector, tmp_path / "d.msgpack")
    again = reo_regions.load_detector(tmp_path / "d.msgpack")
    np.testing.assert_array_equal(again.boxes(features), boxes)
    assert reo_regions.regions_of("learned", features, detector=again).shape == (len(features), 4, 4)
    with pytest.raises(ValueError, match="region kind"):
        reo_regions.regions_of("boxes", features)


# ------------------------------------------------------------------------ losses


def test_losses_leave_true_pairs_out():
    rng = np.random.default_rng(1)
    scores = jnp.asarray(rng.normal(size=(4, 4)), jnp.float32)
    true_of = np.zeros((4, 4), bool)
    true_of[0, 2] = true_of[3, 1] = True
    changed = scores.at[0, 2].add(5.0).at[3, 1].add(-3.0)
    for loss in (lambda s, t: reo_train.hardest_negative_loss(s, 0.2, t),
                 lambda s, t: reo_train.all_negatives_loss(s, 0.2, t),
                 lambda s, t: reo_train.infonce_loss(s, jnp.log(1 / 0.1), t)):
        assert float(loss(scores, jnp.asarray(true_of))) == pytest.approx(float(loss(changed, jnp.asarray(true_of))))
        assert float(loss(scores, None)) != pytest.approx(float(loss(changed, None)))
    # InfoNCE by hand
    s = np.asarray(scores, np.float64) * 10
    by_hand = (np.mean([np.log(np.exp(s[i]).sum()) - s[i, i] for i in range(4)])
               + np.mean([np.log(np.exp(s[:, c]).sum()) - s[c, c] for c in range(4)])) / 2
    assert float(reo_train.infonce_loss(scores, jnp.log(10.0))) == pytest.approx(by_hand, rel=1e-5)


def test_infonce_training_learns_the_temperature_and_reloads(tmp_path):
    rng = np.random.default_rng(0)
    captions = [[["a", "red", "circle"], ["a", "ball"]], [["a", "blue", "box"]], [["two", "shapes"]],
                [["a", "red", "box"]]] * 2
    regions = rng.normal(size=(8, 3, 6)).astype(np.float32)
    regions[:, 2] = 0  # one padding region per image
    vocab = Vocabulary.build(captions, 1)
    config = reo.MatcherConfig(region_size=6, embed_size=8, joint_size=8)
    train_config = reo.MatchTrainConfig(epochs=2, batch_size=4, loss="infonce", mask_false_negatives=True,
                                        val_images=8)
    calls = []

    def train_truth(images, which):
        calls.append(len(images))
        return np.zeros((len(images), len(images)), bool)
    val_truth = np.ones((sum(map(len, captions)), 8), bool)
    trained = reo.train_matcher(config, train_config, vocab, regions, captions, tmp_path, regions, captions,
                                progress=False, train_truth=train_truth, val_truth=val_truth)
    assert calls and "temperature" in trained.params
    assert trained.history[-1]["temperature"] != pytest.approx(0.07, abs=1e-7)
    assert trained.history[0]["val_rsum_ambiguous"] == pytest.approx(6.0)  # everything is true: every hit counts
    loaded = reo.load_matcher(tmp_path / "matcher.msgpack", vocab)
    np.testing.assert_allclose(np.asarray(loaded.params["temperature"]), np.asarray(trained.params["temperature"]))
    with pytest.raises(ValueError, match="needs train_truth"):
        reo.train_matcher(config, train_config, vocab, regions, captions, tmp_path / "x", progress=False)
    with pytest.raises(ValueError, match="loss must be"):
        reo.MatchTrainConfig(loss="triplet")


# ------------------------------------------------------------------------ retrieval and tables


def test_retrieval_measures_by_hand_and_at_chance():
    scores = np.array([[0.9, 0.1, 0.8], [0.2, 0.7, 0.3]])   # 2 images, 3 captions
    owner = np.array([0, 1, 1])
    truth_matrix = np.array([[1, 0], [0, 1], [1, 1]], bool)  # caption 2 is true of both images
    m = retrieval.retrieval_measures(scores, owner, truth_matrix, ks=(1, 2))
    assert m["caption_to_image"]["recall"] == {1: pytest.approx(2 / 3), 2: 1.0}   # caption 2 ranks image 0 first
    assert m["caption_to_image"]["recall_ambiguous"][1] == 1.0
    assert m["image_to_caption"]["recall"][1] == 1.0
    # image 0's true captions 0 and 2 rank 1 and 2: AP 1; image 1's (1, 2) rank 1 and 2: AP 1
    assert m["image_to_caption"]["map"] == pytest.approx(1.0)
    assert m["caption_to_image"]["map_plain"] == pytest.approx((1 + 1 + 0.5) / 3)
    rng = np.random.default_rng(0)
    owner = np.repeat(np.arange(20), 3)
    t = rng.random((60, 20)) < 0.2
    runs = [retrieval.retrieval_measures(rng.random((20, 60)), owner, t) for _ in range(200)]
    for direction in retrieval.DIRECTIONS:
        for key in ("map", "map_plain"):
            assert np.mean([r[direction][key] for r in runs]) == pytest.approx(runs[0][direction][key + "_chance"],
                                                                               abs=0.02)
        assert np.mean([r[direction]["recall_ambiguous"][5] for r in runs]) == pytest.approx(
            runs[0][direction]["recall_ambiguous_chance"][5], abs=0.03)


def test_specificity_separates_what_a_score_follows():
    rng = np.random.default_rng(0)
    images = np.repeat(np.arange(50), 8)
    extra = rng.integers(0, 4, len(images)).astype(float)
    omitted = rng.integers(0, 4, len(images)).astype(float)
    counts = {"extra": extra, "omitted": omitted, "correct": 6 - omitted}
    only_extra = experiment_module("reo_validation").specificity(-extra + 0.01 * rng.normal(size=len(images)), counts, images)
    assert only_extra["beta_extra"] < -0.9 and abs(only_extra["beta_omitted"]) < 0.05
    both = experiment_module("reo_validation").specificity(-extra - omitted, counts, images)
    assert both["beta_extra"] == pytest.approx(both["beta_omitted"], abs=0.15) and both["r2"] > 0.99


def test_reo_factors_multiply_to_e_and_o(x64):
    rng = np.random.default_rng(0)
    a, g = rng.normal(size=(5, 1, 6)), rng.normal(size=(5, 1, 6))
    root = rng.normal(size=(6, 6))
    precision = root @ root.T + np.eye(6)
    _, e, o = reo.reo_from_context(jnp.asarray(a), jnp.asarray(g), jnp.asarray(precision))
    parts = reo.scores.reo_parts_from_context(jnp.asarray(a), jnp.asarray(g), jnp.asarray(precision))
    np.testing.assert_allclose(np.asarray(e), np.asarray(parts["abs_cos"] * parts["E_over_cos"]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(o), np.asarray(parts["abs_cos"] * parts["O_over_cos"]), rtol=1e-6)


def test_candidates_count_against_the_references_tuples():
    a = shapes.Obj("circle", "red", "big", 0, 0, 8.0, 8.0, 7.0)
    scene = shapes.Scene([a], "striped")
    c = experiment_module("known_captions").make_candidate(0, scene, 0, 1, np.random.default_rng(0))
    assert c.counts_against(experiment_module("known_captions").scene_tuples(scene)) == (c.correct, c.extra, c.omitted)
    arrays = experiment_module("reo_validation").count_arrays([c], [{("object", "circle")}])
    assert arrays["correct"][0] == (("object", "circle") in c.stated)
    assert dataclasses.is_dataclass(c)


def test_shapes_scorer_with_learned_regions_is_the_post_gen_default(tmp_path):
    from pregen_jax import postgen
    dataset, scenes, forms = shapes.generate_with_forms(SMALL)
    rng = np.random.default_rng(0)
    for split in dataset.splits.values():
        split.features = rng.random((len(split), 36 * 4)).astype(np.float32)
    vocab = Vocabulary.build(dataset["train"].captions, 1)
    scorer = reo.fit_shapes_scorer(vocab, dataset["train"], dataset["val"], scenes, forms, tmp_path / "w",
                                   reo.MatcherConfig(region_size=4, embed_size=8, joint_size=8),
                                   reo.MatchTrainConfig(epochs=1, batch_size=8, loss="infonce",
                                                        mask_false_negatives=True, val_images=5),
                                   reo_regions.DetectorConfig(epochs=1, batch_images=8), progress=False)
    assert scorer.regions == "learned" and scorer.detector is not None
    reo.save_scorer(scorer, tmp_path / "w" / "matcher" / "matcher.msgpack", tmp_path / "scorer", "toy")
    options = postgen.PostgenOptions(reo_model=str(tmp_path / "scorer"))
    test = dataset["test"]
    ids = list(test.image_ids)
    gts = {i: [" ".join(r) for r in refs] for i, refs in zip(ids, test.captions)}
    res = {i: [" ".join(refs[0])] for i, refs in zip(ids, test.captions)}
    expected = scorer.score(scorer.regions_from_features(test.features), [refs[0] for refs in test.captions],
                            test.captions)
    with postgen.make_metrics(["REO_E_image", "REO_O_refs"], options) as metrics:
        for metric in metrics.metrics:
            metric.bind_images(ids, test.features, "toy")   # flattened grid maps: the detector makes the regions
            _, per_image = metric.compute_score(gts, res)
            np.testing.assert_allclose(per_image, expected[metric.name.removeprefix("REO_")], rtol=1e-5)
    with pytest.raises(ValueError, match="'grid' or 'learned'"):
        reo.save_scorer(scorer, tmp_path / "w" / "matcher" / "matcher.msgpack", tmp_path / "s2", "toy", regions="oracle")

