"""The transformer: one parallel teacher-forced pass equals cached step-by-step decoding, cached
beam search equals beam search that recomputes the prefix, and it trains, checkpoints and
resumes like the RNNs; the architecture registry behind ``[models] architectures``."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax.captioning import decode, evaluate, registry
from pregen_jax.captioning import train as training
from pregen_jax.captioning.models import RnnConfig
from pregen_jax.captioning.transformer import TransformerCaptioner, TransformerConfig
from pregen_jax.datasets import Vocabulary
from pregen_jax.pipeline.config import SearchConfig
from pregen_jax.training import checkpoints

TINY = dict(width=16, mlp_width=24, image_size=8, dropout=0.3, layers=2, heads=4)
FEATURES = 10
VOCAB = Vocabulary(["a", "red", "blue", "box", "ball", "above"])
WORDS = ["a", "red", "blue", "box", "ball", "above"]


def toy_data(seed=0, images=24):
    rng = np.random.default_rng(seed)
    captions = [[list(rng.choice(WORDS, rng.integers(2, 7))) for _ in range(rng.integers(1, 4))] for _ in range(images)]
    return rng.normal(size=(images, FEATURES)).astype(np.float32), captions


def tiny_model(seed=0, **sizes):
    model = registry.make_model("transformer", TransformerConfig(**{**TINY, **sizes}), len(VOCAB))
    return model, training.init_params(model, FEATURES, seed)


def test_registered_and_named_in_the_config():
    assert "transformer" in registry.ARCHITECTURES.names()
    assert isinstance(registry.make_model("transformer", TransformerConfig(**TINY), 7), TransformerCaptioner)
    config = SearchConfig.from_dict({"models": {"architectures": ["transformer", "merge"]}})
    assert config.models.architectures == ["transformer", "merge"]
    with pytest.raises(ValueError, match=r"unknown architecture 'post'; registered: init, pre, par, merge, transformer"):
        SearchConfig.from_dict({"models": {"architectures": ["post"]}}, "s.toml")
    with pytest.raises(ValueError, match=r"s.toml: \[models\] transformer.width = 18 is not a multiple of "
                                         r"transformer.heads = 4"):
        SearchConfig.from_dict({"models": {"architectures": ["transformer"], "transformer": {"width": 18}}},
                               "s.toml")
    SearchConfig.from_dict({"models": {"architectures": ["merge"], "rnn": {"embed_size": 18}}})  # RNNs: no heads


def test_a_registered_architecture_is_accepted_by_the_config():
    @registry.register_architecture("transformer-wide", config=TransformerConfig)
    def wide(arch, config, vocab_size):
        return TransformerCaptioner(arch, config, vocab_size)
    try:
        config = SearchConfig.from_dict({"models": {"architectures": ["transformer-wide"]}})
        assert registry.make_model(config.models.architectures[0], TransformerConfig(**TINY), 7).arch == "transformer-wide"
        with pytest.raises(ValueError, match="already registered"):
            registry.register_architecture("transformer", config=TransformerConfig)(wide)
    finally:
        registry.ARCHITECTURES.remove("transformer-wide")


def test_parallel_pass_equals_cached_step_by_step_decoding():
    model, params = tiny_model(1)
    features, captions = toy_data(1, images=5)
    start = jax.jit(decode.start, static_argnums=(0, 3))
    step = jax.jit(decode.decode_step, static_argnums=0)
    with jax.default_matmul_precision("highest"):
        rp = evaluate.reference_probs(model, params, features, captions, VOCAB, batch_size=4, progress=False)
        for n in range(5):
            for r, tokens in enumerate(captions[n]):
                ids = VOCAB.encode(tokens) + [0]
                state = start(model, params, features[n:n + 1], 8)  # room for 8 tokens: the longest is 7
                prev = 0
                for t, target in enumerate(ids):
                    state, logits = step(model, params, state, jnp.array([prev]))
                    np.testing.assert_allclose(rp.probs[n, r, t], jax.nn.softmax(logits[0])[target], atol=1e-5)
                    assert rp.ranks[n, r, t] == int(jnp.sum(logits[0] > logits[0, target]))
                    prev = target
    # The cache holds each layer's keys and values, batch first, then heads: the image prefix and 8 tokens.
    assert state.cache["layers_0"]["attention"]["key"].shape == (1, 4, 9, 4)


def uncached_beam_search(model, params, features, width, max_len, min_len):
    """Beam search over the same beam functions, each step recomputing every position so far
    with the parallel pass (causal: the padding after position t does not reach position t)."""
    batch = features.shape[0]

    def decode_step(rows, prev, beams, t):
        tokens = beams.tokens.reshape(batch * width, max_len)
        inputs = jnp.concatenate([jnp.zeros((batch * width, 1), jnp.int32), tokens[:, :-1]], 1)
        logits = decode.teacher_forced_logits(model, params, rows, inputs)
        return rows, jax.lax.dynamic_index_in_dim(logits, t, 1, keepdims=False)

    beams = decode.init_beams(jnp.asarray(features), batch, width, max_len)
    beams, _ = decode.beam_loop(decode_step, beams, max_len, min_len)
    return beams.tokens[:, 0], beams.scores[:, 0]


def test_cached_beam_search_equals_recomputing_the_prefix():
    model, params = tiny_model(3)
    features = toy_data(3, images=6)[0] * 3
    with jax.default_matmul_precision("highest"):
        tokens, scores = decode.beam_search(model, params, features, 3, 9, 2)
        expected_tokens, expected_scores = uncached_beam_search(model, params, features, 3, 9, 2)
        np.testing.assert_array_equal(tokens, expected_tokens)
        np.testing.assert_allclose(scores, expected_scores, atol=1e-5)
        np.testing.assert_array_equal(decode.greedy(model, params, features, 9, 2),
                                      decode.beam_search(model, params, features, 1, 9, 2)[0])
    assert len({tuple(row) for row in np.asarray(tokens)}) > 1  # captions depend on the image


def _train(workdir, epochs=2, **overrides):
    features, captions = toy_data(4, images=30)
    train_config = training.TrainConfig(epochs=epochs, batch_size=8, patience=5, snapshot_epochs=[1], **overrides)
    return training.train_captioner("transformer", TransformerConfig(**TINY), train_config, 0, VOCAB, features,
                                    captions, features[:10], captions[:10], workdir, progress=False)


def test_trains_checkpoints_and_resumes(tmp_path, monkeypatch):
    straight = _train(tmp_path / "a")
    assert (tmp_path / "a" / "snapshot-epoch1.msgpack").is_file()
    assert [h["epoch"] for h in straight.history] == [1, 2]
    assert straight.history[1]["train_loss"] < straight.history[0]["train_loss"]
    calls = {"n": 0}
    original = training.val_perplexity

    def crash_on_second(*args):
        calls["n"] += 1
        if calls["n"] == 2:
            raise KeyboardInterrupt
        return original(*args)
    monkeypatch.setattr(training, "val_perplexity", crash_on_second)
    with pytest.raises(KeyboardInterrupt):
        _train(tmp_path / "b")
    _, meta = checkpoints.load(tmp_path / "b" / "checkpoint.msgpack")
    assert meta["state"]["epoch"] == 1
    monkeypatch.setattr(training, "val_perplexity", original)
    resumed = _train(tmp_path / "b")
    jax.tree_util.tree_map(np.testing.assert_allclose, straight.params, resumed.params)
    loaded = training.load_trained(tmp_path / "b" / "model.msgpack", VOCAB)
    assert isinstance(loaded.model, TransformerCaptioner) and loaded.model == straight.model
    features = toy_data(5, images=4)[0]
    captions = evaluate.generate_captions(loaded.model, loaded.params, features, VOCAB, beam_width=3, max_len=8,
                                          min_len=2, progress=False)
    assert len(captions) == 4 and all(2 <= len(c) <= 8 for c in captions)


def test_each_family_records_its_own_sizes_under_the_names_checkpoints_know():
    """An RNN's checkpoints and cache keys see only the RNN's sizes; the transformer's record its width
    and feed-forward width under the names they had when one config held both families (embed_size,
    hidden_size), so its earlier checkpoints load and its caches stay valid."""
    assert set(RnnConfig().record()) == {"cell", "embed_size", "hidden_size", "image_size", "dropout",
                                         "learn_init_state", "normalize_image"}
    sizes = TransformerConfig(width=32, mlp_width=64, layers=3)
    assert sizes.record() == {"embed_size": 32, "hidden_size": 64, "image_size": 256, "layers": 3, "heads": 4,
                              "dropout": 0.5, "normalize_image": False}
    assert TransformerConfig.from_record(sizes.record()) == sizes
    with pytest.raises(ValueError, match="architecture 'transformer' is built from a TransformerConfig, not a RnnConfig"):
        registry.make_model("transformer", RnnConfig(), 7)
