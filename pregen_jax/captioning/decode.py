"""Teacher forcing, greedy decoding and beam search over any registered architecture.

Decoding is a ``jax.lax`` loop over the model's ``step`` from its ``start_decoding`` state: a
``DecoderState`` holding the model's carry and its 'cache' collection (an RNN has none; the
transformer keeps its keys and values there). Every leaf of that state leads with the batch
axis, so beam search reorders it with one gather. Beam search is pure functions over a
``Beams`` state (``init_beams``, ``extend_beams``, ``beam_loop``), its decoder a parameter.
Teacher forcing is one pass when the model has ``teacher_forced`` (the transformer), else a
loop over ``step``. All are jit-compiled; the model (a hashable Flax module) is a static
argument, the parameters a traced one.

Decoding stops early (``stop_early=True``, a ``jax.lax.while_loop``): greedy once every real
row has ended, beam search once beam 0 of every real image has ended. Rows marked padding
(``real``) do not hold it up. The tokens and scores are bit for bit those of running every
one of the ``max_len`` positions (``stop_early=False``, a ``jax.lax.scan``): after its end a
greedy row only repeats the edge token, and beam 0 stays where it is (below). A NaN
log-probability (a NaN or +inf logit) on a live row is recorded per row (``finite``) and, in
``greedy`` and ``beam_search``, raised as an error outside jit rather than let win a top-k.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import flax.linen as nn
import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

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


def decode_step(model: nn.Module, params, state: DecoderState, tokens) -> tuple[DecoderState, jax.Array]:
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


def _log_probs(logits, t, min_len):
    """logits: f[N, V] at position t -> f32[N, V] log-probabilities, the end token forbidden before ``min_len``."""
    return _forbid_end(jax.nn.log_softmax(logits.astype(jnp.float32)), t, min_len)


def _real_rows(real, batch: int):
    """real: bool[B] or None (every row real) -> bool[B]."""
    return jnp.ones((batch,), bool) if real is None else jnp.asarray(real, bool)


def run_loop(body: Callable, carry, max_len: int, stop_early: bool, finished: Callable):
    """``carry, y = body(carry, t)`` for t = 0, 1, ... -> (carry, ys: every y stacked [max_len, ...], positions run i32[]).

    Without ``stop_early`` a ``jax.lax.scan`` over all ``max_len`` positions; with it a
    ``jax.lax.while_loop`` that also stops before position t once ``finished(carry)`` is
    true, the ys of the positions it did not run left zero (the edge token).
    """
    if not stop_early:
        carry, ys = jax.lax.scan(body, carry, jnp.arange(max_len))
        return carry, ys, jnp.int32(max_len)
    zeros = lambda y: jnp.zeros((max_len, *y.shape), y.dtype)  # noqa: E731
    ys = jax.tree_util.tree_map(zeros, jax.eval_shape(body, carry, jnp.int32(0))[1])

    def loop_body(loop):
        t, carry, ys = loop
        carry, y = body(carry, t)
        return t + 1, carry, jax.tree_util.tree_map(lambda buffer, value: buffer.at[t].set(value), ys, y)

    t, carry, ys = jax.lax.while_loop(lambda loop: (loop[0] < max_len) & ~finished(loop[1]), loop_body,
                                      (jnp.int32(0), carry, ys))
    return carry, ys, t


@flax.struct.dataclass
class Decoded:
    """Decoding's result for B rows.

    tokens: i32[B, max_len] (edge-padded after the caption's end); scores: f32[B], the summed
    log-probability of beam search's best beam (None for greedy); steps: i32[B], the positions
    the loop ran (the same for every row of a call); finite: bool[B], no NaN log-probability
    met the row while it was live (a NaN or +inf logit gives one; padding rows count too).
    """

    tokens: jax.Array
    scores: Any
    steps: jax.Array
    finite: jax.Array


def check_finite(decoded: Decoded, real=None, source: str = "decoding") -> Decoded:
    """``decoded`` if every real row's log-probabilities were finite, else a ValueError naming the first bad row.

    Reads concrete arrays: call it outside jit, on what a jit-compiled decoder returned.
    """
    finite = np.asarray(decoded.finite)
    bad = ~finite & (np.ones(len(finite), bool) if real is None else np.asarray(real, bool))
    if bad.any():
        raise ValueError(f"{source}: the model gave a non-finite logit (NaN or +inf) for row {int(np.argmax(bad))} "
                         f"({int(bad.sum())} of {len(bad)} rows); the checkpoint may be diverged")
    return decoded


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5))
def decode_greedy(model: nn.Module, params, features, max_len: int = 50, min_len: int = 5,
                  stop_early: bool = True, real=None) -> Decoded:
    """features: f[B, D]; real: bool[B] (default: every row) -> ``Decoded`` (scores None).

    With ``stop_early`` the loop stops once every real row has emitted the end token.
    """
    batch = features.shape[0]
    real = _real_rows(real, batch)

    def body(carry, t):
        state, prev, done, finite = carry
        state, logits = decode_step(model, params, state, prev)
        log_probs = _log_probs(logits, t, min_len)
        token = jnp.where(done, EDGE_ID, jnp.argmax(log_probs, -1))
        finite = finite & (done | ~jnp.isnan(log_probs).any(-1))
        return (state, token, done | (token == EDGE_ID), finite), token

    def finished(carry):
        _, _, done, finite = carry
        return jnp.all(done | ~real) | ~jnp.all(finite | ~real)

    init = (start(model, params, features, max_len), jnp.full((batch,), EDGE_ID, jnp.int32),
            jnp.zeros((batch,), bool), jnp.ones((batch,), bool))
    (*_, finite), tokens, steps = run_loop(body, init, max_len, stop_early, finished)
    return Decoded(tokens.T.astype(jnp.int32), None, jnp.full((batch,), steps), finite)


def greedy(model: nn.Module, params, features, max_len: int = 50, min_len: int = 5, stop_early: bool = True,
           real=None):
    """features: f[B, D] -> tokens i32[B, max_len], edge-padded after the caption's end.

    A ValueError if a real row met a non-finite logit (``decode_greedy`` and ``check_finite``).
    """
    return check_finite(decode_greedy(model, params, features, max_len, min_len, stop_early, real), real).tokens


@flax.struct.dataclass
class Beams:
    """Beam search's state for B images of k beams each.

    tokens: i32[B, k, max_len] (edge-padded); scores: f32[B, k], summed log-probabilities,
    sorted best first; done: bool[B, k], the beam has emitted the end token; decoder: the
    decoder's state for the B*k rows (row b*k + j is image b's beam j); finite: bool[B], no
    live beam of the image has met a NaN log-probability.
    """

    tokens: jax.Array
    scores: jax.Array
    done: jax.Array
    decoder: Any
    finite: jax.Array


def init_beams(decoder, batch: int, width: int, max_len: int) -> Beams:
    """Beams from the decoder's state for B rows (repeated to B*k); only beam 0 is live at first."""
    decoder = jax.tree_util.tree_map(lambda x: jnp.repeat(x, width, axis=0), decoder)
    scores = jnp.tile(jnp.where(jnp.arange(width) == 0, 0.0, -jnp.inf), (batch, 1))
    return Beams(jnp.zeros((batch, width, max_len), jnp.int32), scores, jnp.zeros((batch, width), bool), decoder,
                 jnp.ones((batch,), bool))


def previous_tokens(beams: Beams, t) -> jax.Array:
    """i32[B*k]: each row's token at position t - 1 (the edge token at t = 0)."""
    last = jax.lax.dynamic_index_in_dim(beams.tokens, jnp.maximum(t - 1, 0), 2, keepdims=False)
    return jnp.where(t > 0, last, EDGE_ID).reshape(-1)


def extend_beams(beams: Beams, decoder, log_probs, t) -> Beams:
    """The k best one-token extensions of ``beams`` given ``log_probs: f32[B*k, V]`` at position t.

    ``decoder`` is the decoder's state after reading position t - 1 (B*k rows); it follows its
    beams. A finished beam can only "emit" the edge token again, at no cost. Scores are plain
    sums of log-probabilities (no length penalty), so a live beam's score only falls: the
    stopping rule of ``beam_loop`` rests on it.
    """
    batch, width = beams.scores.shape
    vocab = log_probs.shape[-1]
    log_probs = log_probs.reshape(batch, width, vocab)
    finite = beams.finite & ~jnp.any(jnp.isnan(log_probs) & ~beams.done[..., None], (1, 2))
    stay = jnp.where(jnp.arange(vocab) == EDGE_ID, 0.0, -jnp.inf)
    log_probs = jnp.where(beams.done[..., None], stay, log_probs)
    total = (beams.scores[..., None] + log_probs).reshape(batch, width * vocab)
    scores, flat = jax.lax.top_k(total, width)
    parent, token = flat // vocab, (flat % vocab).astype(jnp.int32)
    tokens = jnp.take_along_axis(beams.tokens, parent[..., None], 1).at[:, :, t].set(token)
    done = jnp.take_along_axis(beams.done, parent, 1) | (token == EDGE_ID)
    rows = (parent + jnp.arange(batch)[:, None] * width).reshape(-1)
    return Beams(tokens, scores, done, gather_rows(decoder, rows), finite)


def beams_finished(beams: Beams, real=None) -> jax.Array:
    """bool[]: beam 0 of every real image has ended (or a real image met a NaN log-probability).

    Then no later position changes beam 0's tokens or score: a finished beam keeps its score
    (it extends by the edge token at cost 0.0), a live one's only falls (log-probabilities are
    at most 0), and ``jax.lax.top_k`` puts the lower index first among equal scores, so beam
    0's own extension (index 0) stays first.
    """
    real = _real_rows(real, beams.scores.shape[0])
    return jnp.all(beams.done[:, 0] | ~real) | ~jnp.all(beams.finite | ~real)


def beam_loop(decode_step: Callable, beams: Beams, max_len: int, min_len: int, stop_early: bool = True,
              real=None) -> tuple[Beams, jax.Array]:
    """Run beam search for up to ``max_len`` positions -> (beams, positions run: i32[]).

    ``decode_step(decoder, prev i32[B*k], beams, t) -> (decoder, logits f[B*k, V])`` reads the
    previous token (or, without a cache, every token so far in ``beams.tokens``). With
    ``stop_early`` it stops once ``beams_finished`` (``real``: bool[B], default every image).
    """
    def body(beams, t):
        decoder, logits = decode_step(beams.decoder, previous_tokens(beams, t), beams, t)
        return extend_beams(beams, decoder, _log_probs(logits, t, min_len), t), None

    beams, _, steps = run_loop(body, beams, max_len, stop_early, functools.partial(beams_finished, real=real))
    return beams, steps


@functools.partial(jax.jit, static_argnums=(0, 3, 4, 5, 6))
def decode_beams(model: nn.Module, params, features, width: int = 3, max_len: int = 50, min_len: int = 5,
                 stop_early: bool = True, real=None) -> Decoded:
    """Beam search over summed log-probabilities, the decoder's cache carried along.

    features: f[B, D]; real: bool[B] (default: every row) -> ``Decoded``: each image's best
    beam (edge-padded) and its summed log-probability, the end token included when it was
    reached. A finished beam stays in the beam with its score; width 1 is greedy decoding.
    """
    batch = features.shape[0]
    beams = init_beams(start(model, params, features, max_len), batch, width, max_len)
    beams, steps = beam_loop(lambda decoder, prev, beams, t: decode_step(model, params, decoder, prev), beams, max_len,
                             min_len, stop_early, real)
    # top_k keeps beams sorted by score: beam 0 is the best
    return Decoded(beams.tokens[:, 0], beams.scores[:, 0], jnp.full((batch,), steps), beams.finite)


def beam_search(model: nn.Module, params, features, width: int = 3, max_len: int = 50, min_len: int = 5,
                stop_early: bool = True, real=None):
    """features: f[B, D] -> (tokens i32[B, max_len], scores f32[B]) of ``decode_beams``.

    A ValueError if a real row met a non-finite logit (``check_finite``).
    """
    decoded = check_finite(decode_beams(model, params, features, width, max_len, min_len, stop_early, real), real)
    return decoded.tokens, decoded.scores
