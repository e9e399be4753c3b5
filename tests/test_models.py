"""The four architectures: shapes, training, checkpoints, resume, probabilities and decode."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax.captioning import decode, evaluate, input_pipeline
from pregen_jax.captioning import train as training
from pregen_jax.captioning.models import FEATURE_STATS, RNN_ARCHITECTURES, Captioner, RnnConfig, with_feature_mean
from pregen_jax.datasets import Vocabulary
from pregen_jax.training import checkpoints
from tests.conftest import covering

# every architecture and every cell once in the test command, the other 8 of the 12 with -m slow
ARCH_CELLS = covering([(arch, cell) for arch in RNN_ARCHITECTURES for cell in ("gru", "lstm", "rnn")],
                      [("init", "gru"), ("pre", "lstm"), ("par", "rnn"), ("merge", "lstm")])

TINY = dict(embed_size=12, hidden_size=16, image_size=8, dropout=0.5)
FEATURES = 10


def toy_data(seed=0, images=24):
    rng = np.random.default_rng(seed)
    words = ["a", "red", "blue", "box", "ball", "above", "small"]
    captions = [[list(rng.choice(words, rng.integers(2, 7))) for _ in range(rng.integers(1, 4))] for _ in range(images)]
    return rng.normal(size=(images, FEATURES)).astype(np.float32), captions


VOCAB = Vocabulary(["a", "red", "blue", "box", "ball", "above"])  # "small" is unknown


@pytest.mark.parametrize("arch, cell", ARCH_CELLS)
def test_one_train_step_changes_every_parameter(arch, cell):
    config = RnnConfig(cell=cell, learn_init_state=True, normalize_image=True, **TINY)
    model = Captioner(arch, config, len(VOCAB))
    features, captions = toy_data()
    params = with_feature_mean(training.init_params(model, FEATURES, 0), config, features)
    assert (FEATURE_STATS in params) == (arch == "pre")  # only pre centres its features
    pairs = [(n, ids) for n, _, ids in input_pipeline.encode_references(captions, VOCAB)]
    import optax
    optimizer = optax.adam(1e-2)
    step = training.make_train_step(model, optimizer)
    batch = input_pipeline.training_batch(pairs, list(range(8)), features)
    new, _, loss = step(params, optimizer.init(params), jax.random.PRNGKey(0), *batch)
    assert np.isfinite(float(loss))
    logits = decode.teacher_forced_logits(model, params, jnp.asarray(batch[0]), jnp.asarray(batch[1]))
    assert logits.shape == (8, batch[1].shape[1], len(VOCAB))
    changed = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), params["params"], new["params"])
    assert all(jax.tree_util.tree_leaves(changed)), changed
    if arch == "pre":  # set from the training features, never trained
        np.testing.assert_array_equal(params[FEATURE_STATS]["image_proj"]["mean"],
                                      new[FEATURE_STATS]["image_proj"]["mean"])


@pytest.mark.parametrize("arch", RNN_ARCHITECTURES)
def test_image_is_never_dropped(arch):
    """Dropout is on words and RNN outputs only: the decoder state an image starts from (for pre,
    the state after the image word) does not depend on the dropout draw."""
    model = Captioner(arch, RnnConfig(**TINY), len(VOCAB))
    params = training.init_params(model, FEATURES, 0)
    features = np.abs(toy_data()[0])
    starts = [model.apply(params, features, True, method=Captioner.start, rngs={"dropout": jax.random.PRNGKey(k)})
              for k in (1, 2)]
    jax.tree_util.tree_map(np.testing.assert_array_equal, *starts)
    assert any(float(jnp.std(leaf, axis=0).max()) > 0 for leaf in jax.tree_util.tree_leaves(starts[0]))  # the image


def test_pre_centres_its_features_on_the_training_mean(tmp_path):
    features, captions = toy_data(4, images=30)
    config = RnnConfig(normalize_image=True, **TINY)
    trained = training.train_captioner("pre", config, training.TrainConfig(epochs=1, batch_size=8), 0, VOCAB, features,
                                       captions, features[:10], captions[:10], tmp_path, progress=False)
    unit = features / np.linalg.norm(features, axis=1, keepdims=True)
    mean = trained.params[FEATURE_STATS]["image_proj"]["mean"]
    np.testing.assert_allclose(mean, unit.mean(0), atol=1e-6)
    reloaded = training.load_trained(trained.path, VOCAB).params[FEATURE_STATS]["image_proj"]["mean"]
    np.testing.assert_array_equal(reloaded, mean)
    kernel, bias = (trained.params["params"]["image_proj"][k] for k in ("kernel", "bias"))
    image = trained.model.apply(trained.params, features[:3], method=Captioner._image)
    np.testing.assert_allclose(image, np.maximum((unit[:3] - mean) @ kernel + bias, 0), atol=1e-5)


def _colour_data(seed, images, size=1024):
    """CNN-like features (non-negative, mostly the same for every image; the colour in 8 of them)
    and captions whose only image-dependent word comes after a fixed prefix."""
    rng = np.random.default_rng(seed)
    colour = rng.integers(0, 2, images)
    features = np.maximum(rng.normal(size=(images, size)), 0) + 1.0
    features[:, :8] += 2.0 * colour[:, None]
    return features.astype(np.float32), [[["a", "box", "above", ["red", "blue"][c]]] for c in colour]


def test_pre_learns_to_use_the_image(tmp_path):
    """The pre regression: with non-negative, uncentred features, Adam grew the image word's common
    part until the image step's tanh gave every image the same state, and pre trained into a
    language model (p(colour) ~ 0.48 here, and one caption for every image of the demo)."""
    features, captions = _colour_data(0, 256)
    val_features, val_captions = _colour_data(1, 64)
    config = RnnConfig(embed_size=32, hidden_size=32, image_size=32, dropout=0.0)
    trained = training.train_captioner("pre", config, training.TrainConfig(epochs=20, batch_size=16, patience=99), 0,
                                       VOCAB, features, captions, val_features, val_captions, tmp_path, progress=False)
    rp = evaluate.reference_probs(trained.model, trained.params, val_features, val_captions, VOCAB, progress=False)
    assert rp.probs[:, 0, 3].mean() > 0.8  # the colour word, given the image


@pytest.mark.parametrize("arch, cell", ARCH_CELLS)
def test_teacher_forcing_in_one_scan_equals_the_step_loop(arch, cell):
    """``teacher_forced`` (embedding and output layer over all positions, only the cell scanned)
    gives the logits of ``step`` at each position; in training it drops out and is differentiable."""
    config = RnnConfig(cell=cell, **TINY)
    model = Captioner(arch, config, len(VOCAB))
    params = training.init_params(model, FEATURES, 2)
    features = jax.random.normal(jax.random.PRNGKey(3), (5, FEATURES))
    inputs = jax.random.randint(jax.random.PRNGKey(4), (5, 9), 0, len(VOCAB))
    together = model.apply(params, features, inputs, method="teacher_forced")
    state, steps = model.apply(params, features, method="start"), []
    for t in range(inputs.shape[1]):
        state, logits = model.apply(params, state, inputs[:, t], method="step")
        steps.append(logits)
    np.testing.assert_allclose(together, jnp.stack(steps, 1), atol=1e-5)
    dropped = model.apply(params, features, inputs, True, method="teacher_forced",
                          rngs={"dropout": jax.random.PRNGKey(5)})
    assert dropped.shape == together.shape and not np.allclose(dropped, together)


@pytest.mark.parametrize("arch", RNN_ARCHITECTURES)
def test_ref_probs_equal_step_by_step_decoding(arch):
    config = RnnConfig(cell="lstm", **TINY)
    model = Captioner(arch, config, len(VOCAB))
    features, captions = toy_data(1, images=9)
    params = with_feature_mean(training.init_params(model, FEATURES, 1), config, features)
    captions[0][0] = captions[0][0] + ["small"]  # not in VOCAB: read as the unknown token, with a warning
    with pytest.warns(UserWarning, match=r"reference tokens are not in the model's vocabulary and are read as <unk>"):
        rp = evaluate.reference_probs(model, params, features, captions, VOCAB, batch_size=5, progress=False)
    for n in (0, 4, 8):
        for r, tokens in enumerate(captions[n]):
            ids = VOCAB.encode(tokens) + [0]
            state = model.apply(params, features[n:n + 1], method=Captioner.start)
            prev = 0
            for t, target in enumerate(ids):
                state, logits = model.apply(params, state, jnp.array([prev]), method=Captioner.step)
                probs = jax.nn.softmax(logits[0])
                assert rp.mask[n, r, t]
                np.testing.assert_allclose(rp.probs[n, r, t], probs[target], atol=1e-5)
                assert rp.ranks[n, r, t] == int(jnp.sum(logits[0] > logits[0, target]))
                prev = target
            assert not rp.mask[n, r, len(ids):].any()


@pytest.mark.parametrize("arch", RNN_ARCHITECTURES)
def test_beam_width_one_equals_greedy(arch):
    model = Captioner(arch, RnnConfig(**TINY), len(VOCAB))
    params = training.init_params(model, FEATURES, 2)
    features = np.random.default_rng(2).normal(size=(6, FEATURES)).astype(np.float32) * 3
    greedy = np.asarray(decode.greedy(model, params, features, 12, 3))
    beam1 = np.asarray(decode.beam_search(model, params, features, 1, 12, 3)[0])
    np.testing.assert_array_equal(greedy, beam1)
    beam3 = np.asarray(decode.beam_search(model, params, features, 3, 12, 3)[0])
    assert beam3.shape == (6, 12)
    for row in (greedy, beam3):  # minimum length 3: no end token among the first 3 words
        assert (row[:, :3] != 0).all()


def sequence_log_prob(model, params, features, tokens) -> float:
    """Summed log-probability of a decoded row (up to and including its end token), step by step."""
    state = model.apply(params, features[None], method=Captioner.start)
    prev, total = 0, 0.0
    for token in tokens:
        state, logits = model.apply(params, state, jnp.array([prev]), method=Captioner.step)
        total += float(jax.nn.log_softmax(logits[0])[token])
        if token == 0:
            break
        prev = int(token)
    return total


def test_beam_search_scores_at_least_greedy():
    model = Captioner("par", RnnConfig(**TINY), len(VOCAB))
    params = training.init_params(model, FEATURES, 3)
    features = np.random.default_rng(3).normal(size=(8, FEATURES)).astype(np.float32) * 3
    greedy = np.asarray(decode.greedy(model, params, features, 10, 2))
    beam, beam_scores = decode.beam_search(model, params, features, 4, 10, 2)
    for i in range(8):  # every row: ended captions and those cut at max_len are scored alike
        beam_score = sequence_log_prob(model, params, features[i], np.asarray(beam[i]))
        assert beam_score == pytest.approx(float(beam_scores[i]), abs=1e-4)
        assert beam_score >= sequence_log_prob(model, params, features[i], greedy[i]) - 1e-4


def _train(workdir, epochs=2, arch="merge", **overrides):
    features, captions = toy_data(4, images=30)
    train_config = training.TrainConfig(epochs=epochs, batch_size=8, patience=5, snapshot_epochs=[1], **overrides)
    return training.train_captioner(arch, RnnConfig(**TINY), train_config, 0, VOCAB, features, captions,
                                    features[:10], captions[:10], workdir, progress=False)


@pytest.mark.parametrize("arch", covering([(arch,) for arch in RNN_ARCHITECTURES], [("merge",)]))
def test_training_checkpoints_snapshots_and_resume(tmp_path, crash_on, arch):
    straight = _train(tmp_path / "a", arch=arch)
    assert (tmp_path / "a" / "snapshot-epoch1.msgpack").is_file()
    assert [h["epoch"] for h in straight.history] == [1, 2]
    # Interrupt the second epoch (after the first epoch's checkpoint), then resume.
    with crash_on(training, "val_perplexity"), pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b", arch=arch)
    assert not (tmp_path / "b" / "model.msgpack").exists()
    _, meta = checkpoints.load(tmp_path / "b" / "checkpoint.msgpack")
    assert meta["state"]["epoch"] == 1
    resumed = _train(tmp_path / "b", arch=arch)
    jax.tree_util.tree_map(np.testing.assert_allclose, straight.params, resumed.params)
    # A finished run loads instead of training.
    assert _train(tmp_path / "b", arch=arch).history == resumed.history
    # A checkpoint made with other settings is refused rather than silently mixed.
    (tmp_path / "b" / "model.msgpack").unlink()
    with pytest.raises(ValueError, match="checkpoint.msgpack: checkpoint was made with a different train config"):
        _train(tmp_path / "b", epochs=3, arch=arch)


def test_corrupt_checkpoint_and_vocab_mismatch(tmp_path):
    trained = _train(tmp_path / "m", epochs=1)
    wrong_vocab = Vocabulary(["a", "red"])
    with pytest.raises(ValueError, match="different vocabulary"):
        training.load_trained(trained.path, wrong_vocab)
    with pytest.raises(ValueError, match="do not match"):
        evaluate.reference_probs(trained.model, trained.params, *toy_data(), wrong_vocab, progress=False)
    data = trained.path.read_bytes()
    trained.path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="model.msgpack: corrupt or truncated checkpoint"):
        training.load_trained(trained.path, VOCAB)


def test_bad_references_are_clear_errors():
    model = Captioner("merge", RnnConfig(**TINY), len(VOCAB))
    params = training.init_params(model, FEATURES, 0)
    features, captions = toy_data()
    captions[3][0] = []
    with pytest.raises(ValueError, match="image 3, reference 0 is an empty caption"):
        evaluate.reference_probs(model, params, features, captions, VOCAB, progress=False)
    captions[3] = []
    with pytest.raises(ValueError, match="image 3 has no reference captions"):
        evaluate.reference_probs(model, params, features, captions, VOCAB, progress=False)
    with pytest.raises(ValueError, match="feature rows for"):
        evaluate.reference_probs(model, params, features[:5], toy_data()[1], VOCAB, progress=False)


def test_config_validation():
    with pytest.raises(ValueError, match="unknown architecture 'post'"):
        training.train_captioner("post", RnnConfig(**TINY), training.TrainConfig(), 0, VOCAB,
                                 *toy_data(), *toy_data(), "unused", progress=False)
    with pytest.raises(ValueError, match="cell"):
        RnnConfig(cell="transformer")
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        RnnConfig(hidden_size=0)
    with pytest.raises(ValueError, match=r"snapshot_epochs \[3\] lie beyond epochs = 2"):
        training.TrainConfig(epochs=2, snapshot_epochs=[3])
    with pytest.raises(ValueError, match="valid integer"):
        training.TrainConfig(epochs="1")
