"""Loops over ``Captioner.step``: teacher forcing, greedy decoding and beam search.

All are ``jax.lax`` loops batched over images and jit-compiled; the model (a hashable
Flax module) is a static argument, the parameters a traced one.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from .models import Captioner

EDGE_ID = 0


def teacher_forced_logits(model: Captioner, params, features, inputs, train: bool = False, rng=None):
    """features: f[B, D]; inputs: i32[B, L] (edge token, then the words) -> logits f[B, L, V]."""
    rngs = {"dropout": rng} if train else {}
    state = model.apply(params, features, train, method=Captioner.start, rngs=rngs)

    def body(state, xs):
        tokens, t = xs
        step_rngs = {"dropout": jax.random.fold_in(rng, t)} if train else {}
        return model.apply(params, state, tokens, train, method=Captioner.step, rngs=step_rngs)

    _, logits = jax.lax.scan(body, state, (inputs.T, jnp.arange(inputs.shape[1])))
    return logits.swapaxes(0, 1)


@functools.partial(jax.jit, static_argnums=0)
def true_token_probs(model: Captioner, params, features, inputs, targets):
    """Probability and rank of every target token, teacher-forced.

    features: f[B, D]; inputs, targets: i32[B, L] -> (probs f32[B, L], ranks i32[B, L]);
    rank = how many vocabulary tokens score strictly higher than the target.
    """
    logits = teacher_forced_logits(model, params, features, inputs).astype(jnp.float32)
    true_logit = jnp.take_along_axis(logits, targets[..., None], -1)
    log_probs = true_logit[..., 0] - jax.nn.logsumexp(logits, -1)
    ranks = jnp.sum(logits > true_logit, -1).astype(jnp.int32)
    return jnp.exp(log_probs), ranks


def _forbid_end(log_probs, t, min_len):
    """No end token before ``min_len`` words."""
    return jnp.where(t < min_len, log_probs.at[..., EDGE_ID].set(-jnp.inf), log_probs)


@functools.partial(jax.jit, static_argnums=(0, 3, 4))
def greedy(model: Captioner, params, features, max_len: int = 50, min_len: int = 5):
    """features: f[B, D] -> tokens i32[B, max_len], edge-padded after the caption's end."""
    batch = features.shape[0]
    state = model.apply(params, features, method=Captioner.start)

    def body(carry, t):
        state, prev, done = carry
        state, logits = model.apply(params, state, prev, method=Captioner.step)
        log_probs = _forbid_end(jax.nn.log_softmax(logits.astype(jnp.float32)), t, min_len)
        token = jnp.where(done, EDGE_ID, jnp.argmax(log_probs, -1))
        return (state, token, done | (token == EDGE_ID)), token

    init = (state, jnp.full((batch,), EDGE_ID, jnp.int32), jnp.zeros((batch,), bool))
    _, tokens = jax.lax.scan(body, init, jnp.arange(max_len))
    return tokens.T.astype(jnp.int32)


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
def beam_search(model: Captioner, params, features, width: int = 3, max_len: int = 50, min_len: int = 5):
    """Beam search over summed log-probabilities.

    features: f[B, D] -> (tokens i32[B, max_len] of each image's best beam, edge-padded;
    scores f32[B], its summed log-probability, the end token included when it was reached).
    A finished beam stays in the beam with its score; width 1 is greedy decoding.
    """
    batch = features.shape[0]
    state = model.apply(params, features, method=Captioner.start)
    state = jax.tree_util.tree_map(lambda x: jnp.repeat(x, width, axis=0), state)   # [B*k, ...]
    scores = jnp.tile(jnp.where(jnp.arange(width) == 0, 0.0, -jnp.inf), (batch, 1))  # one live beam at first
    tokens = jnp.zeros((batch, width, max_len), jnp.int32)
    done = jnp.zeros((batch, width), bool)
    prev = jnp.full((batch * width,), EDGE_ID, jnp.int32)

    def body(carry, t):
        state, prev, scores, tokens, done = carry
        state, logits = model.apply(params, state, prev, method=Captioner.step)
        vocab = logits.shape[-1]
        log_probs = _forbid_end(jax.nn.log_softmax(logits.astype(jnp.float32)), t, min_len)
        log_probs = log_probs.reshape(batch, width, vocab)
        # A finished beam can only "emit" the edge token again, at no cost.
        stay = jnp.where(jnp.arange(vocab) == EDGE_ID, 0.0, -jnp.inf)
        log_probs = jnp.where(done[..., None], stay, log_probs)
        total = (scores[..., None] + log_probs).reshape(batch, width * vocab)
        scores, flat = jax.lax.top_k(total, width)
        parent, token = flat // vocab, (flat % vocab).astype(jnp.int32)
        take = lambda x: jnp.take_along_axis(x, parent.reshape(batch, width, *([1] * (x.ndim - 2))), 1)  # noqa: E731
        tokens = take(tokens).at[:, :, t].set(token)
        done = take(done) | (token == EDGE_ID)
        rows = (parent + jnp.arange(batch)[:, None] * width).reshape(-1)
        state = jax.tree_util.tree_map(lambda x: x[rows], state)
        return (state, token.reshape(-1), scores, tokens, done), None

    (_, _, scores, tokens, _), _ = jax.lax.scan(body, (state, prev, scores, tokens, done), jnp.arange(max_len))
    return tokens[:, 0], scores[:, 0]  # top_k keeps beams sorted by score: beam 0 is the best
