"""Teacher forcing, greedy decoding and beam search over any registered architecture.

Decoding is a ``jax.lax`` loop over the model's ``step`` from its ``start_decoding`` state: a
``DecoderState`` holding the model's carry and its 'cache' collection (an RNN has none; the
transformer keeps its keys and values there). Every leaf of that state leads with the batch
axis, so beam search reorders it with one gather. Beam search is pure functions over a
``Beams`` state (``init_beams``, ``extend_beams``, ``beam_loop``), its decoder a parameter.
Teacher forcing is one pass when the model has ``teacher_forced`` (the transformer), else a
loop over ``step``. All are jit-compiled; the model (a hashable Flax module) is a static
argument, the parameters a traced one.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp

EDGE_ID = 0
CACHE = "cache"  # the Flax collection a model keeps decoding state in (keys and values)


def teacher_forced_logits(model: nn.Module, params, features, inputs, train: bool = False, rng=None):
    """features: f[B, D]; inputs: i32[B, L] (edge token, then the words) -> logits f[B, L, V]."""
    rngs = {"dropout": rng} if train else {}
    if hasattr(model, "teacher_forced"):  # every position in one parallel pass
        return model.apply(params, features, inputs, train, method="teacher_forced", rngs=rngs)
    state = model.apply(params, features, train, method="start", rngs=rngs)

    def body(state, xs):
        tokens, t = xs
        step_rngs = {"dropout": jax.random.fold_in(rng, t)} if train else {}
        return model.apply(params, state, tokens, train, method="step", rngs=step_rngs)

    _, logits = jax.lax.scan(body, state, (inputs.T, jnp.arange(inputs.shape[1])))
    return logits.swapaxes(0, 1)


@functools.partial(jax.jit, static_argnums=0)
def true_token_probs(model: nn.Module, params, features, inputs, targets):
    """Probability and rank of every target token, teacher-forced.

    features: f[B, D]; inputs, targets: i32[B, L] -> (probs f32[B, L], ranks i32[B, L]);
    rank = how many vocabulary tokens score strictly higher than the target.
    """
    logits = teacher_forced_logits(model, params, features, inputs).astype(jnp.float32)
    true_logit = jnp.take_along_axis(logits, targets[..., None], -1)
    log_probs = true_logit[..., 0] - jax.nn.logsumexp(logits, -1)
    ranks = jnp.sum(logits > true_logit, -1).astype(jnp.int32)
    return jnp.exp(log_probs), ranks


@flax.struct.dataclass
class DecoderState:
    """A model's decoding state for B rows: its carry and its 'cache' collection (both batch-leading)."""

    carry: Any
    cache: Any


def start(model: nn.Module, params, features, max_len: int) -> DecoderState:
    """features: f[B, D] -> the state before the first token, with room for ``max_len`` tokens."""
    carry, variables = model.apply(params, features, max_len, method="start_decoding", mutable=[CACHE])
    return DecoderState(carry, dict(variables).get(CACHE, {}))


def step(model: nn.Module, params, state: DecoderState, tokens) -> tuple[DecoderState, jax.Array]:
    """state, tokens: i32[B] (previous token) -> (next state, logits f[B, V]); the cache grows by one position."""
    variables = {**params, CACHE: state.cache} if state.cache else params
    (carry, logits), mutated = model.apply(variables, state.carry, tokens, method="step", mutable=[CACHE])
    return DecoderState(carry, dict(mutated).get(CACHE, {})), logits


def gather_rows(tree, rows):
    """Every leaf of ``tree`` (batch-leading) at ``rows: i32[N]``."""
    return jax.tree_util.tree_map(lambda x: x[rows], tree)


def _forbid_end(log_probs, t, min_len):
    """No end token before ``min_len`` words."""
    return jnp.where(t < min_len, log_probs.at[..., EDGE_ID].set(-jnp.inf), log_probs)


@functools.partial(jax.jit, static_argnums=(0, 3, 4))
def greedy(model: nn.Module, params, features, max_len: int = 50, min_len: int = 5):
    """features: f[B, D] -> tokens i32[B, max_len], edge-padded after the caption's end."""
    batch = features.shape[0]

    def body(carry, t):
        state, prev, done = carry
        state, logits = step(model, params, state, prev)
        log_probs = _forbid_end(jax.nn.log_softmax(logits.astype(jnp.float32)), t, min_len)
        token = jnp.where(done, EDGE_ID, jnp.argmax(log_probs, -1))
        return (state, token, done | (token == EDGE_ID)), token

    init = (start(model, params, features, max_len), jnp.full((batch,), EDGE_ID, jnp.int32),
            jnp.zeros((batch,), bool))
    _, tokens = jax.lax.scan(body, init, jnp.arange(max_len))
    return tokens.T.astype(jnp.int32)


@flax.struct.dataclass
class Beams:
    """Beam search's state for B images of k beams each.

    tokens: i32[B, k, max_len] (edge-padded); scores: f32[B, k], summed log-probabilities,
    sorted best first; done: bool[B, k], the beam has emitted the end token; decoder: the
    decoder's state for the B*k rows (row b*k + j is image b's beam j).
    """

    tokens: jax.Array
    scores: jax.Array
    done: jax.Array
    decoder: Any


def init_beams(decoder, batch: int, width: int, max_len: int) -> Beams:
    """Beams from the decoder's state for B rows (repeated to B*k); only beam 0 is live at first."""
    decoder = jax.tree_util.tree_map(lambda x: jnp.repeat(x, width, axis=0), decoder)
    scores = jnp.tile(jnp.where(jnp.arange(width) == 0, 0.0, -jnp.inf), (batch, 1))
    return Beams(jnp.zeros((batch, width, max_len), jnp.int32), scores, jnp.zeros((batch, width), bool), decoder)


def previous_tokens(beams: Beams, t) -> jax.Array:
    """i32[B*k]: each row's token at position t - 1 (the edge token at t = 0)."""
    last = jax.lax.dynamic_index_in_dim(beams.tokens, jnp.maximum(t - 1, 0), 2, keepdims=False)
    return jnp.where(t > 0, last, EDGE_ID).reshape(-1)


def extend_beams(beams: Beams, decoder, log_probs, t) -> Beams:
    """The k best one-token extensions of ``beams`` given ``log_probs: f32[B*k, V]`` at position t.

    ``decoder`` is the decoder's state after reading position t - 1 (B*k rows); it follows its
    beams. A finished beam can only "emit" the edge token again, at no cost.
    """
    batch, width = beams.scores.shape
    vocab = log_probs.shape[-1]
    log_probs = log_probs.reshape(batch, width, vocab)
    stay = jnp.where(jnp.arange(vocab) == EDGE_ID, 0.0, -jnp.inf)
    log_probs = jnp.where(beams.done[..., None], stay, log_probs)
    total = (beams.scores[..., None] + log_probs).reshape(batch, width * vocab)
    scores, flat = jax.lax.top_k(total, width)
    parent, token = flat // vocab, (flat % vocab).astype(jnp.int32)
    tokens = jnp.take_along_axis(beams.tokens, parent[..., None], 1).at[:, :, t].set(token)
    done = jnp.take_along_axis(beams.done, parent, 1) | (token == EDGE_ID)
    rows = (parent + jnp.arange(batch)[:, None] * width).reshape(-1)
    return Beams(tokens, scores, done, gather_rows(decoder, rows))


def beam_loop(decode_step: Callable, beams: Beams, max_len: int, min_len: int) -> Beams:
    """Run beam search for ``max_len`` positions.

    ``decode_step(decoder, prev i32[B*k], beams, t) -> (decoder, logits f[B*k, V])`` reads the
    previous token (or, without a cache, every token so far in ``beams.tokens``).
    """
    def body(beams, t):
        decoder, logits = decode_step(beams.decoder, previous_tokens(beams, t), beams, t)
        log_probs = _forbid_end(jax.nn.log_softmax(logits.astype(jnp.float32)), t, min_len)
        return extend_beams(beams, decoder, log_probs, t), None

    return jax.lax.scan(body, beams, jnp.arange(max_len))[0]


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
def beam_search(model: nn.Module, params, features, width: int = 3, max_len: int = 50, min_len: int = 5):
    """Beam search over summed log-probabilities, the decoder's cache carried along.

    features: f[B, D] -> (tokens i32[B, max_len] of each image's best beam, edge-padded;
    scores f32[B], its summed log-probability, the end token included when it was reached).
    A finished beam stays in the beam with its score; width 1 is greedy decoding.
    """
    beams = init_beams(start(model, params, features, max_len), features.shape[0], width, max_len)
    beams = beam_loop(lambda decoder, prev, beams, t: step(model, params, decoder, prev), beams, max_len, min_len)
    return beams.tokens[:, 0], beams.scores[:, 0]  # top_k keeps beams sorted by score: beam 0 is the best
