"""Every registered caption-generator architecture, walked by name (as huggingface/evaluate's
common test walks its metrics): output shapes, one train step changes every parameter, and
decoding agrees with teacher forcing. An architecture someone registers is tested by being
registered; a failure names it."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from pregen_jax.captioning import ARCHITECTURES, decode, make_model
from pregen_jax.captioning import train as training
from pregen_jax.captioning.models import FEATURE_STATS, RnnConfig, with_feature_mean
from pregen_jax.captioning.transformer import TransformerConfig

# Small sizes of each family (an architecture is built from its registered config class's).
SIZES = {RnnConfig: RnnConfig(embed_size=8, hidden_size=16, image_size=8, dropout=0.5),
         TransformerConfig: TransformerConfig(width=8, mlp_width=16, image_size=8, dropout=0.5, layers=1, heads=2)}
VOCAB, FEATURES, BATCH, LENGTH = 11, 6, 4, 5


def built(name: str, seed: int = 0):
    """The architecture ``name`` over VOCAB tokens, its parameters, and image features f[BATCH, FEATURES]."""
    sizes = SIZES[ARCHITECTURES.get(name).config]
    model = make_model(name, sizes, VOCAB)
    features = np.random.default_rng(seed).normal(size=(BATCH, FEATURES)).astype(np.float32)
    params = with_feature_mean(training.init_params(model, FEATURES, seed), sizes, features)
    return model, params, features


def tokens(seed: int = 1) -> np.ndarray:
    """i32[BATCH, LENGTH]: the edge token, then words (ids 2.. ; 0 is the edge, 1 the unknown token)."""
    words = np.random.default_rng(seed).integers(2, VOCAB, (BATCH, LENGTH - 1))
    return np.concatenate([np.zeros((BATCH, 1), np.int64), words], 1).astype(np.int32)


@pytest.mark.parametrize("name", ARCHITECTURES.names())
def test_output_shapes(name):
    model, params, features = built(name)
    logits = decode.teacher_forced_logits(model, params, jnp.asarray(features), jnp.asarray(tokens()))
    assert logits.shape == (BATCH, LENGTH, VOCAB) and bool(jnp.isfinite(logits).all())
    state = decode.start(model, params, jnp.asarray(features), LENGTH)
    _, step_logits = decode.decode_step(model, params, state, jnp.zeros((BATCH,), jnp.int32))
    assert step_logits.shape == (BATCH, VOCAB)


@pytest.mark.parametrize("name", ARCHITECTURES.names())
def test_one_train_step_changes_every_parameter(name):
    model, params, features = built(name)
    inputs = tokens()
    targets = np.concatenate([inputs[:, 1:], np.zeros((BATCH, 1), np.int32)], 1)  # the next word, then the end
    optimizer = optax.adam(1e-2)
    step = training.make_train_step(model, optimizer)
    new, _, loss = step(params, optimizer.init(params), jax.random.PRNGKey(0), features, inputs, targets,
                        np.ones(inputs.shape, np.float32))
    assert np.isfinite(float(loss))
    changed = jax.tree_util.tree_map(lambda a, b: bool(jnp.any(a != b)), params["params"], new["params"])
    assert all(jax.tree_util.tree_leaves(changed)), f"{name}: parameters a step left unchanged: {changed}"
    if FEATURE_STATS in params:  # set from the training features, never trained
        same = jax.tree_util.tree_map(np.array_equal, params[FEATURE_STATS], new[FEATURE_STATS])
        assert all(jax.tree_util.tree_leaves(same))


@pytest.mark.parametrize("name", ARCHITECTURES.names())
def test_decoding_agrees_with_teacher_forcing(name):
    """Greedy decoding's step-by-step logits are teacher forcing's on the tokens it chose, and each
    token it chose is teacher forcing's argmax there (up to each caption's end)."""
    model, params, features = built(name, seed=2)
    decoded = np.asarray(decode.greedy(model, params, jnp.asarray(features), max_len=LENGTH, min_len=0))
    inputs = np.concatenate([np.zeros((BATCH, 1), np.int32), decoded[:, :-1]], 1)  # edge, then what it chose
    forced = np.asarray(decode.teacher_forced_logits(model, params, jnp.asarray(features), jnp.asarray(inputs)))
    state, stepped = decode.start(model, params, jnp.asarray(features), LENGTH), []
    for t in range(LENGTH):
        state, logits = decode.decode_step(model, params, state, jnp.asarray(inputs[:, t]))
        stepped.append(np.asarray(logits))
    np.testing.assert_allclose(np.stack(stepped, 1), forced, rtol=1e-4, atol=1e-5, err_msg=name)
    live = np.cumsum(decoded == decode.EDGE_ID, 1) - (decoded == decode.EDGE_ID) == 0  # up to and with the end
    assert (forced.argmax(-1) == decoded)[live].all(), name
