"""REO: the attention and scores on hand-made vectors, the matching model's training and resume,
candidate captions of known content, and the shapes dataset's scenes."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax import reo
from pregen_jax.datasets import Vocabulary, shapes
from pregen_jax.reo import train as reo_train
from pregen_jax.training import checkpoints
from tests.conftest import experiment_module

# ------------------------------------------------------------------------ attention (eqs. 1-3)


def _attention_oracle(regions, words, lam):
    """Eqs. 1-3 written out with loops, for one image and one caption."""
    def cos(x, y):
        return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))
    k, m = len(regions), len(words)
    c = np.array([[max(0.0, cos(regions[i], words[j])) for j in range(m)] for i in range(k)])
    norm = np.sqrt((c ** 2).sum(axis=0, keepdims=True))
    sim = np.divide(c, norm, out=np.zeros_like(c), where=norm > 0)  # a word no region likes: sim 0
    alpha = np.exp(lam * sim) / np.exp(lam * sim).sum(axis=1, keepdims=True)
    return alpha, alpha @ words


def test_attention_by_hand():
    # two regions, two words: v1 = h1 and v2 = h2 orthogonal, so each region sees only its word
    regions = np.array([[1.0, 0.0], [0.0, 1.0]])
    words = np.array([[2.0, 0.0], [0.0, 3.0]])
    alpha = np.asarray(reo.attention(regions, words, np.array([True, True]), lam=9.0))
    high = np.exp(9.0) / (np.exp(9.0) + 1.0)  # sim is 1 for the matching word, 0 for the other
    np.testing.assert_allclose(alpha, [[high, 1 - high], [1 - high, high]], rtol=1e-6)


def test_attention_sums_to_one_ignores_padding_and_matches_oracle():
    rng = np.random.default_rng(0)
    regions = rng.normal(size=(5, 4))
    words = rng.normal(size=(6, 4))
    mask = np.array([True, True, True, True, False, False])
    alpha = np.asarray(reo.attention(regions, words, mask, lam=9.0))
    np.testing.assert_allclose(alpha.sum(axis=1), 1.0, rtol=1e-6)
    assert (alpha[:, 4:] == 0).all()
    oracle_alpha, oracle_context = _attention_oracle(regions, words[:4], 9.0)
    np.testing.assert_allclose(alpha[:, :4], oracle_alpha, rtol=1e-5, atol=1e-7)
    # padded words change nothing, whatever they hold
    garbage = words.copy()
    garbage[4:] = 1e3
    np.testing.assert_allclose(reo.context_vectors(regions, garbage, mask), oracle_context, rtol=1e-5, atol=1e-6)
    # a batch of captions in one call gives the same as one at a time
    batch = np.asarray(reo.context_vectors(regions[None], np.stack([words, words[::-1]]),
                                           np.stack([mask, mask[::-1]])))
    np.testing.assert_allclose(batch[0], oracle_context, rtol=1e-5, atol=1e-6)


def test_pair_scores_equal_mean_cosine_of_context_vectors():
    rng = np.random.default_rng(1)
    regions = rng.normal(size=(3, 5, 4)).astype(np.float32)
    words = rng.normal(size=(4, 6, 4)).astype(np.float32)
    mask = np.arange(6)[None, :] < np.array([[6], [2], [1], [4]])
    scores = np.asarray(reo.pair_scores(regions, words, mask))
    for b in range(3):
        for c in range(4):
            a = np.asarray(reo.context_vectors(regions[b], words[c], mask[c]))
            v = regions[b]
            expected = np.mean(np.sum(a * v, -1) / (np.linalg.norm(a, axis=-1) * np.linalg.norm(v, axis=-1)))
            assert scores[b, c] == pytest.approx(expected, abs=1e-5)


# ------------------------------------------------------------------------ scores (eqs. 4-9)


def test_projection_residuals_are_orthogonal(x64):
    rng = np.random.default_rng(2)
    x, onto = rng.normal(size=(7, 5)), rng.normal(size=(7, 5))
    residual = np.asarray(reo.projection_residual(x, onto))
    np.testing.assert_allclose(np.sum(residual * onto, axis=-1), 0.0, atol=1e-10)
    # what was removed is parallel to onto
    removed = x - residual
    np.testing.assert_allclose(np.abs(np.sum(removed * onto, -1)),
                               np.linalg.norm(removed, axis=-1) * np.linalg.norm(onto, axis=-1), rtol=1e-9)
    # zero ground truth (an empty region) removes nothing rather than dividing by zero
    np.testing.assert_allclose(reo.projection_residual(x[:1], np.zeros((1, 5))), x[:1])


def test_mahalanobis_by_hand():
    precision = np.diag([4.0, 1.0])
    assert float(reo.mahalanobis(np.array([1.0, 2.0]), np.array([0.0, 0.0]), precision)) == pytest.approx(np.sqrt(8))
    assert float(reo.mahalanobis(np.array([3.0, 4.0]), np.zeros(2), np.eye(2))) == pytest.approx(5.0)


def test_reo_by_hand_and_direction():
    g = np.array([[1.0, 0.0]])
    # candidate at 60 degrees: half of it lies along g
    a = np.array([[0.5, np.sqrt(3) / 2]])
    r, e, o = (float(x) for x in reo.reo_from_context(a, g, np.eye(2)))
    assert r == pytest.approx(0.5)
    assert e == pytest.approx(0.5)  # |proj_g a| = |a| cos = 0.5: the other half is extra
    assert o == pytest.approx(0.5)  # |proj_a g| = 0.5
    # orthogonal: nothing relevant; E and O at their lowest (all extra, all missing)
    r, e, o = (float(x) for x in reo.reo_from_context(np.array([[0.0, 1.0]]), g, np.eye(2)))
    assert (r, e, o) == pytest.approx((0.0, 0.0, 0.0), abs=1e-7)
    # with S = diag(1, 4) the distance along g (first axis) is unchanged
    r, e, o = (float(x) for x in reo.reo_from_context(a, g, np.linalg.inv(np.diag([1.0, 4.0]))))
    assert e == pytest.approx(0.5)
    assert o == pytest.approx(0.5 * np.sqrt(0.25 + 0.75 / 4))  # proj_a g = 0.5 a, measured in S^-1


def test_identical_candidate_and_ground_truth_score_best():
    rng = np.random.default_rng(3)
    g = rng.normal(size=(36, 8))
    g /= np.linalg.norm(g, axis=-1, keepdims=True)
    best = np.array(reo.reo_from_context(g, g, np.eye(8)))
    np.testing.assert_allclose(best, [1.0, 1.0, 1.0], rtol=1e-6)
    for scale in (0.1, 0.5, 1.0, 3.0):  # candidates of the same length, off by a growing amount
        other = g + scale * rng.normal(size=g.shape)
        other /= np.linalg.norm(other, axis=-1, keepdims=True)
        assert (np.array(reo.reo_from_context(other, g, np.eye(8))) < best - 1e-3).all()
    # with a Mahalanobis metric the residuals of an identical pair are still zero: E and O are
    # the full lengths of the ground truth
    cov, _ = reo.ledoit_wolf(rng.normal(size=(100, 8)))
    precision = np.linalg.inv(cov)
    r, e, o = reo.reo_from_context(g, g, precision)
    full = np.mean(np.sqrt(np.einsum("kd,de,ke->k", g, precision, g)))
    assert (float(r), float(e), float(o)) == pytest.approx((1.0, full, full), rel=1e-5)


def test_ledoit_wolf_matches_scikit_learn_value():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 5)) @ rng.normal(size=(5, 5))
    matrix, shrinkage = reo.ledoit_wolf(x)
    assert shrinkage == pytest.approx(0.09468747353606984, rel=1e-9)  # sklearn.covariance.ledoit_wolf, 1.9.1
    centred = x - x.mean(0)
    empirical = centred.T @ centred / len(x)
    expected = (1 - shrinkage) * empirical + shrinkage * np.trace(empirical) / 5 * np.eye(5)
    np.testing.assert_allclose(matrix, expected, rtol=1e-12)
    # isotropic data: everything is shrunk to the scaled identity
    assert reo.ledoit_wolf(np.array([[1., 2.], [3., 1.], [0., 0.], [2., 5.]]))[1] == pytest.approx(1.0)
    from sklearn.covariance import ledoit_wolf  # the reference (test extra scikit-learn)
    theirs, their_shrinkage = ledoit_wolf(x)
    assert shrinkage == pytest.approx(their_shrinkage, rel=1e-9)
    np.testing.assert_allclose(matrix, theirs, rtol=1e-9)


def test_covariance_checks():
    with pytest.raises(ValueError, match="not positive definite"):
        reo.Covariance.from_matrix(np.zeros((3, 3)), "test")
    with pytest.raises(ValueError, match="square matrix"):
        reo.Covariance.from_matrix(np.zeros((3, 2)), "test")
    with pytest.raises(ValueError, match="Ledoit-Wolf needs"):
        reo.ledoit_wolf(np.zeros((1, 3)))


# ------------------------------------------------------------------------ the matching model

VOCAB = Vocabulary(["a", "red", "blue", "box", "ball", "and"])
TINY = reo.MatcherConfig(region_size=6, embed_size=8, joint_size=8)


def _toy(images=24, seed=0):
    rng = np.random.default_rng(seed)
    words = ["a", "red", "blue", "box", "ball", "and", "small"]  # "small" is unknown
    captions = [[list(rng.choice(words, rng.integers(1, 6))) for _ in range(rng.integers(1, 4))]
                for _ in range(images)]
    return rng.normal(size=(images, 5, 6)).astype(np.float32), captions


def test_encoders_shapes_mask_and_norms():
    matcher = reo.ScanMatcher(TINY, VOCAB)
    params = matcher.init(0)
    regions, _ = _toy()
    v = matcher.encode_regions(params, regions)
    assert v.shape == (24, 5, 8)
    np.testing.assert_allclose(np.linalg.norm(v, axis=-1), 1.0, rtol=1e-5)
    ids, lengths = reo.pad_token_ids([["a", "red", "box"], ["ball"]], VOCAB)
    assert ids.shape == (2, 8) and lengths.tolist() == [3, 1]
    h, mask = matcher.encode_words(params, ids, lengths)
    assert h.shape == (2, 8, 8) and mask.tolist()[1] == [True] + [False] * 7
    assert (np.asarray(h)[1, 1:] == 0).all()
    # the backward states respect the length: padding does not leak into real words
    h_alone, _ = matcher.encode_words(params, ids[1:, :1], lengths[1:])
    np.testing.assert_allclose(h[1, 0], h_alone[0, 0], rtol=1e-5, atol=1e-6)
    assert isinstance(matcher, reo.Matcher)
    # started on standardised regions: the mean region projects to zero, one sd off the mean to the kernel row
    shifted = regions * 3.0 + 5.0
    data_params = matcher.init(0, shifted)
    mean, sd = shifted.reshape(-1, 6).mean(0), shifted.reshape(-1, 6).std(0) + 1e-3
    kernel = params["params"]["region_proj"]["kernel"]
    project = lambda x: matcher.module.apply(data_params, x, method=lambda m, x: m.region_proj(x))
    np.testing.assert_allclose(project(mean[None].astype(np.float32)), 0.0, atol=1e-4)
    one_sd = (mean + sd * np.eye(6)[2]).astype(np.float32)
    np.testing.assert_allclose(project(one_sd[None])[0], kernel[2], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="candidates: caption 1 is empty"):
        reo.pad_token_ids([["a"], []], VOCAB, "candidates")


def test_one_train_step_changes_every_parameter():
    matcher = reo.ScanMatcher(TINY, VOCAB)
    params = matcher.init(0)
    regions, captions = _toy()
    config = reo.MatchTrainConfig(batch_size=8)
    ids, lengths = reo.pad_token_ids([refs[0] for refs in captions[:8]], VOCAB)
    opt_state = reo_train.make_optimizer(config).init(params)
    new, _, loss = reo_train.train_step(params, opt_state, regions[:8], ids, lengths, matcher=matcher, config=config,
                                        hardest=True)
    assert np.isfinite(float(loss)) and float(loss) > 0
    changed = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), params, new)
    assert all(jax.tree_util.tree_leaves(changed)), changed


def test_hardest_negative_loss_by_hand():
    scores = jnp.array([[0.9, 0.8, 0.1], [0.2, 0.5, 0.6], [0.0, 0.3, 0.4]])
    # captions: image 0 hardest 0.8 -> 0.1; image 1 hardest 0.6 -> 0.3; image 2 hardest 0.3 -> 0.1
    # images:   caption 0 hardest 0.2 -> 0;  caption 1 hardest 0.8 -> 0.5; caption 2 hardest 0.6 -> 0.4
    assert float(reo_train.hardest_negative_loss(scores, 0.2)) == pytest.approx(0.1 + 0.3 + 0.1 + 0.5 + 0.4)
    # all negatives: captions 0.1 + 0.3 + 0.1, images 0.5 + 0.4, averaged over the 2 negatives of each pair
    assert float(reo_train.all_negatives_loss(scores, 0.2)) == pytest.approx((0.5 + 0.9) / 2)


def _train(workdir, epochs=2, **overrides):
    regions, captions = _toy(images=20)
    config = reo.MatchTrainConfig(epochs=epochs, batch_size=8, warmup_epochs=1, **overrides)
    return reo.train_matcher(TINY, config, VOCAB, regions, captions, workdir, progress=False)


def test_training_checkpoints_resume_and_mismatch(tmp_path, crash_on):
    straight = _train(tmp_path / "a")
    assert [h["epoch"] for h in straight.history] == [1, 2]
    # interrupt the second epoch's checkpoint write (after the first epoch's), then resume
    with crash_on(checkpoints, "save"), pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b")
    assert not (tmp_path / "b" / "matcher.msgpack").exists()
    _, meta = checkpoints.load(tmp_path / "b" / "checkpoint.msgpack")
    assert meta["state"]["epoch"] == 1
    resumed = _train(tmp_path / "b")
    jax.tree_util.tree_map(np.testing.assert_array_equal, straight.params, resumed.params)
    # a finished run loads, with its vocabulary, instead of training
    loaded = reo.load_matcher(tmp_path / "b" / "matcher.msgpack")
    assert loaded.matcher.vocab.tokens == VOCAB.tokens and loaded.history == resumed.history
    jax.tree_util.tree_map(np.testing.assert_array_equal, loaded.params, resumed.params)
    with pytest.raises(ValueError, match="different vocabulary"):
        reo.load_matcher(tmp_path / "b" / "matcher.msgpack", Vocabulary(["a"]))
    with pytest.raises(ValueError, match="matcher.msgpack: checkpoint was made with a different train config"):
        _train(tmp_path / "b", epochs=3)
    # the post-gen entry point loads the finished model and scores a split
    regions, captions = _toy(images=20)
    scorer = reo.fit_scorer(VOCAB, regions, captions, tmp_path / "b", matcher_config=TINY,
                            train_config=reo.MatchTrainConfig(epochs=2, batch_size=8, warmup_epochs=1),
                            covariance="identity", progress=False)
    regions, captions = _toy(images=5)  # the shapes of test_score_captions: its compiled call is reused
    generated = [refs[-1] for refs in captions]
    corpus = scorer.corpus_scores(regions, generated, captions)
    assert sorted(corpus) == sorted(reo.METRIC_NAMES)
    assert corpus["REO_O_refs"] == pytest.approx(scorer.score(regions, generated, captions)["O_refs"].mean())
    (tmp_path / "b" / "matcher.msgpack").unlink()
    with pytest.raises(ValueError, match="checkpoint.msgpack: checkpoint was made with a different train config"):
        _train(tmp_path / "b", epochs=3)


def test_recalls_by_hand():
    # 2 images, captions 0,1 of image 0 and 2 of image 1
    scores = np.array([[0.1, 0.9, 0.5], [0.8, 0.2, 0.3]])
    recalls = reo_train.recalls_from_scores(scores, np.array([0, 0, 1]), ks=(1, 2))
    # image 0: own best 0.9 ranks first; image 1: own 0.3 below 0.8 -> rank 2
    assert recalls["image_to_caption"] == {1: 0.5, 2: 1.0}
    # caption 0 (image 0): 0.1 < 0.8 -> rank 2; caption 1: first; caption 2 (image 1): 0.3 < 0.5 -> rank 2
    assert recalls["caption_to_image"] == {1: pytest.approx(1 / 3), 2: 1.0}


def test_score_captions_shapes_and_errors():
    matcher = reo.ScanMatcher(TINY, VOCAB)
    params = matcher.init(0)
    regions, captions = _toy(images=5)
    candidates = [refs[0] for refs in captions]
    cov = reo.Covariance.identity(8)
    scores = reo.score_captions(matcher, params, regions, candidates, captions, cov)
    assert sorted(scores) == ["E_image", "E_refs", "O_image", "O_refs", "R_image", "R_refs"]
    assert all(v.shape == (5,) and np.isfinite(v).all() for v in scores.values())
    # one call for all equals one image at a time (padding and the reference mask change nothing)
    for n in (3,):
        alone = reo.score_captions(matcher, params, regions[n:n + 1], candidates[n:n + 1], captions[n:n + 1], cov)
        for key in scores:
            assert alone[key][0] == pytest.approx(scores[key][n], rel=1e-4, abs=1e-6)
    # a candidate that is its image's only reference is as relevant as it can be to the references
    single = [[refs[0]] for refs in captions]
    same = reo.score_captions(matcher, params, regions, candidates, single, cov)
    np.testing.assert_allclose(same["R_refs"], 1.0, rtol=1e-5)
    with pytest.raises(ValueError, match="one per image"):
        reo.score_captions(matcher, params, regions, candidates[:4], captions, cov)
    with pytest.raises(ValueError, match="4-dimensional"):
        reo.score_captions(matcher, params, regions, candidates, captions, reo.Covariance.identity(4))
    covariance = reo.estimate_covariance(matcher, params, regions, captions)
    assert covariance.matrix.shape == (8, 8) and 0 <= covariance.shrinkage <= 1


# ------------------------------------------------------------------------ scenes and candidates


def test_generated_data_unchanged_and_scenes_match_labels(tmp_path):
    config = shapes.ShapesConfig(train=30, val=5, test=12, seed=3)
    dataset, scenes = shapes.generate_with_scenes(config)
    plain = shapes.generate(config)
    for split in ("train", "val", "test"):
        assert np.array_equal(plain[split].pixels, dataset[split].pixels)
        assert plain[split].captions == dataset[split].captions
        for scene, labels in zip(scenes[split], dataset[split].labels):
            assert np.array_equal(shapes._labels(scene.objects, scene.background), labels)
    # a cache folder from before scenes were stored gets them regenerated, identical
    shapes.load_shapes(config, tmp_path)
    folder = tmp_path / config.folder_name
    (folder / shapes.SCENES_FILE).unlink()
    loaded = shapes.load_scenes(config, tmp_path)
    assert (folder / shapes.SCENES_FILE).is_file()
    assert [s.to_json() for s in loaded["test"]] == [s.to_json() for s in scenes["test"]]
    assert [s.to_json() for s in shapes.load_scenes(config, tmp_path)["train"]] == \
        [s.to_json() for s in scenes["train"]]
    (folder / shapes.SCENES_FILE).write_text("{")
    with pytest.raises(ValueError, match="damaged scene file"):
        shapes.load_scenes(config, tmp_path)


def test_relations_agree_with_the_grammar():
    a = shapes.Obj("circle", "red", "big", 0, 0, 8.0, 8.0, 7.0)
    b = shapes.Obj("square", "blue", "small", 2, 1, 24.0, 40.0, 4.0)
    c = shapes.Obj("ring", "green", "small", 0, 2, 40.0, 9.0, 4.0)

    class NotNear:  # the grammar says "next to"/"near" when random() < 0.2
        def random(self):
            return 0.5
    annotator = shapes._Annotator.__new__(shapes._Annotator)
    annotator.rng = NotNear()
    words = {"above": ["above"], "below": ["below"], "left of": ["to", "the", "left", "of"],
             "right of": ["to", "the", "right", "of"]}
    for x, y in ((a, b), (b, a), (a, c), (c, a), (b, c)):
        assert words[shapes.relation_of(x, y)] == annotator.relation(x, y)
    assert shapes.Scene([a, b], "striped").relations() == [(0, "above", 1), (1, "below", 0)]


def test_candidates_count_tuples_exactly():
    red_circle = shapes.Obj("circle", "red", "big", 0, 0, 8.0, 8.0, 7.0)
    blue_box = shapes.Obj("square", "blue", "small", 1, 1, 24.0, 24.0, 4.0)
    scene = shapes.Scene([red_circle, blue_box], "striped")
    assert experiment_module("known_captions").scene_tuples(scene) == {("background", "striped"), ("object", "circle"), ("object", "square"),
                                       ("colour", "circle", "red"), ("colour", "square", "blue"),
                                       ("size", "circle", "big"), ("size", "square", "small")}
    stated = {("object", "circle"), ("colour", "circle", "green"), ("object", "triangle")}
    assert experiment_module("known_captions").count_tuples(stated, scene) == (1, 2, 6)
    rng = np.random.default_rng(0)
    for omit in (0, 1):
        for extras in range(4):
            for _ in range(5):
                c = experiment_module("known_captions").make_candidate(7, scene, omit, extras, rng)
                assert c.image == 7 and c.correct + c.omitted == 7
                assert len(c.missing_phrases) == omit
                assert (c.extra == 0) == (extras == 0)
                vocabulary = {w for ws in shapes.SHAPES.values() for w in ws} | set(shapes.COLOURS) | \
                    {w for ws in shapes.SIZE_WORDS.values() for w in ws} | \
                    {w for ws in shapes.BACKGROUNDS.values() for w in ws} | \
                    {"a", "an", "and", "of", "on", "background", "picture", "photo", "drawing"}
                assert set(c.tokens) <= vocabulary
    with pytest.raises(ValueError, match="image 7: can leave out 0..1"):
        experiment_module("known_captions").make_candidate(7, scene, 2, 0, rng)
    many = experiment_module("known_captions").make_candidates([scene, dataclasses.replace(scene, objects=[red_circle])], max_extras=2)
    assert len(many) == 2 * 3 + 1 * 3


def test_reo_scores_are_post_gen_metrics_of_a_search(tmp_path):
    from pregen_jax import postgen
    assert "no REO matching model" in postgen.metric_availability(postgen.PostgenOptions())["REO_R_image"][1]
    trained = _train(tmp_path / "m", epochs=1)
    scorer = reo.ReoScorer(trained.matcher, trained.params, reo.Covariance.identity(TINY.joint_size))
    reo.save_scorer(scorer, tmp_path / "m" / "matcher.msgpack", tmp_path / "scorer", "toy-features")
    options = postgen.PostgenOptions(reo_model=str(tmp_path / "scorer"))
    assert all(ok for name, (ok, _) in postgen.metric_availability(options).items() if name.startswith("REO_"))
    regions, captions = _toy(images=5)
    ids = [f"im{k}" for k in range(5)]
    gts = {i: [" ".join(ref) for ref in refs] for i, refs in zip(ids, captions)}
    res = {i: [" ".join(refs[-1])] for i, refs in zip(ids, captions)}
    with postgen.make_metrics(list(reo.METRIC_NAMES), options) as metrics:
        with pytest.raises(ValueError, match="bind_images"):
            metrics.metrics[0].compute_score(gts, res)
        expected = scorer.score(regions, [refs[-1] for refs in captions], captions)
        with pytest.raises(ValueError, match="trained on image features 'toy-features', this search's are 'other'"):
            metrics.metrics[0].bind_images(ids, regions, "other")
        for metric in metrics.metrics:
            metric.bind_images(ids[::-1], regions[::-1], "toy-features")  # bound by id, in any order
            corpus, per_image = metric.compute_score(gts, res)
            np.testing.assert_allclose(per_image, expected[metric.name.removeprefix("REO_")], rtol=1e-5)
            blocks, _ = metric.score_blocks(gts, res, [ids[:2], ids])
            assert blocks[1] == pytest.approx(corpus)

