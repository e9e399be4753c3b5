"""Self-critical sequence training (SCST): fine-tuning a trained caption generator on its own
samples' CIDEr-D (Rennie et al. 2017), for any registered architecture.

Each step draws ``images`` training images, samples K captions of each from the model
(categorical sampling, no dropout), rewards each with its CIDEr-D (optionally mixed with BLEU-4)
against the image's references on the device (``pregen_jax.rewards``: document frequencies over
the training images, the end token counted), subtracts a baseline, either the reward of the
greedy caption (Rennie et al.) or the mean reward of the image's K - 1 other samples (Luo
2020's "new SCST"), and takes an Adam step on the policy gradient
-sum (r - b) log p(token) / tokens over every sampled token up to and including the end token
(as self-critical.pytorch's ``RewardCriterion``). Sampling, rewards, baseline and update are one
jitted step; the rewards' tables are its arguments (never constants compiled in).
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pydantic

from ..datasets import Vocabulary
from ..rewards import Bleu, CiderD
from ..settings import NonNegativeInt, PositiveFloat, PositiveInt, settings
from . import decode
from .models import Captioner


@settings
class ScstConfig:
    """How to fine-tune a caption generator by SCST (``[scst]``)."""

    steps: PositiveInt = 300                    # optimizer steps
    images: PositiveInt = 32                    # training images per step
    samples: PositiveInt = 5                    # sampled captions per image (K)
    baseline: Literal["greedy", "mean"] = "mean"  # greedy caption's reward, or the mean of the other K - 1 samples
    learning_rate: PositiveFloat = 1e-3         # Adam (experiments/scst: 1e-4 moved the demo's small models too little)
    max_len: PositiveInt = 24                   # positions sampled
    min_len: NonNegativeInt = 5                 # no end token before this many words (as generation)
    bleu_weight: float = pydantic.Field(0.0, ge=0, le=1)  # reward = (1 - w) CIDEr-D + w BLEU-4
    log_every: PositiveInt = 25                 # steps between history entries

    @pydantic.model_validator(mode="after")
    def _enough_samples(self):
        if self.baseline == "mean" and self.samples < 2:
            raise ValueError("baseline 'mean' needs samples >= 2 (the mean of the other samples)")
        return self


@dataclasses.dataclass
class Rewards:
    """The reward tables (pytrees) and the mix: (1 - bleu_weight) CIDEr-D + bleu_weight BLEU-4."""

    cider: CiderD
    bleu: Bleu | None
    bleu_weight: float

    @classmethod
    def build(cls, captions, vocab: Vocabulary, bleu_weight: float = 0.0) -> Rewards:
        """From the training captions (``captions[n][r]``: words), encoded with the model's vocabulary,
        each ending with the end token (as a label row that fits, read by ``array_to_str``)."""
        references = [[[*vocab.encode(tokens), decode.EDGE_ID] for tokens in refs] for refs in captions]
        bleu = Bleu(references, vocab_size=len(vocab)) if bleu_weight > 0 else None
        return cls(CiderD(references, vocab_size=len(vocab)), bleu, bleu_weight)

    def tables(self) -> tuple:
        return self.cider, self.bleu


def mixed_reward(tables: tuple, bleu_weight: float, tokens, image_index) -> jax.Array:
    """f32[B]: the reward of each row of ``tokens: i32[B, L]`` (0-padded after the end) for its image."""
    cider, bleu = tables
    score = cider(tokens, image_index)
    return score if bleu is None else (1 - bleu_weight) * score + bleu_weight * bleu(tokens, image_index)


def sample_tokens(model: Captioner, params, features, rng, max_len: int, min_len: int) -> jax.Array:
    """features: f[B, D] -> i32[B, max_len]: one caption sampled from the model per row (categorical,
    no dropout), the end token (0) at its end and after it."""
    batch = features.shape[0]

    def body(carry, t):
        state, prev, done = carry
        state, logits = decode.decode_step(model, params, state, prev)
        log_probs = jax.nn.log_softmax(logits.astype(jnp.float32))
        log_probs = jnp.where(t < min_len, log_probs.at[:, decode.EDGE_ID].set(-jnp.inf), log_probs)
        token = jax.random.categorical(jax.random.fold_in(rng, t), log_probs).astype(jnp.int32)
        token = jnp.where(done, decode.EDGE_ID, token)
        return (state, token, done | (token == decode.EDGE_ID)), token

    init = (decode.start(model, params, features, max_len), jnp.full((batch,), decode.EDGE_ID, jnp.int32),
            jnp.zeros((batch,), bool))
    _, tokens = jax.lax.scan(body, init, jnp.arange(max_len))
    return tokens.T


def token_log_probs(model: Captioner, params, features, tokens) -> tuple[jax.Array, jax.Array]:
    """(log p of each token f32[B, L], mask f32[B, L]: the caption's tokens up to and including its end)."""
    inputs = jnp.concatenate([jnp.full((tokens.shape[0], 1), decode.EDGE_ID, tokens.dtype), tokens[:, :-1]], 1)
    logits = decode.teacher_forced_logits(model, params, features, inputs).astype(jnp.float32)
    log_probs = jnp.take_along_axis(jax.nn.log_softmax(logits), tokens[..., None], -1)[..., 0]
    ended_before = jnp.cumsum(tokens == decode.EDGE_ID, 1) - (tokens == decode.EDGE_ID)  # ends strictly before t
    return log_probs, (ended_before == 0).astype(jnp.float32)


@functools.lru_cache(maxsize=16)
def scst_step(model: Captioner, config: ScstConfig):
    """The jitted step: (params, opt_state, rng, features f[I, D], image_index i32[I], tables)
    -> (params, opt_state, {"reward", "baseline", "loss"})."""
    optimizer = optax.adam(config.learning_rate)
    K = config.samples  # noqa: N806

    @jax.jit
    def step(params, opt_state, rng, features, image_index, tables):
        rows, images = jnp.repeat(features, K, 0), jnp.repeat(image_index, K)
        tokens = sample_tokens(model, params, rows, rng, config.max_len, config.min_len)
        reward = mixed_reward(tables, config.bleu_weight, tokens, images)
        if config.baseline == "greedy":
            greedy = decode.decode_greedy(model, params, features, config.max_len, config.min_len, False).tokens
            baseline = jnp.repeat(mixed_reward(tables, config.bleu_weight, greedy, image_index), K)
        else:
            grouped = reward.reshape(-1, K)
            baseline = ((grouped.sum(1, keepdims=True) - grouped) / (K - 1)).reshape(-1)
        advantage = jax.lax.stop_gradient(reward - baseline)

        def loss_fn(p):
            log_probs, mask = token_log_probs(model, p, rows, tokens)
            return -jnp.sum(advantage[:, None] * log_probs * mask) / jnp.sum(mask)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, {"reward": reward.mean(), "baseline": baseline.mean(),
                                                                 "loss": loss}
    return step, optimizer


def finetune(model: Captioner, params, config: ScstConfig, train_features, train_captions, vocab: Vocabulary,
             seed: int = 0, rewards: Rewards | None = None) -> tuple[dict, list[dict]]:
    """SCST from ``params`` -> (fine-tuned params, history: every ``log_every`` steps the mean
    sampled reward, the mean baseline and the loss). ``train_features``: f32[N, D];
    ``train_captions[n][r]``: words (the rewards' references; ``rewards`` built once may be given)."""
    rewards = rewards or Rewards.build(train_captions, vocab, config.bleu_weight)
    step, optimizer = scst_step(model, config)
    opt_state = optimizer.init(params)
    features = np.asarray(train_features, np.float32)
    rng = np.random.default_rng([seed, 50])
    key = jax.random.PRNGKey(seed)
    history, tables = [], rewards.tables()
    for index in range(config.steps):
        chosen = rng.choice(len(features), min(config.images, len(features)), replace=False).astype(np.int32)
        params, opt_state, stats = step(params, opt_state, jax.random.fold_in(key, index), features[chosen], chosen,
                                        tables)
        if (index + 1) % config.log_every == 0 or index + 1 == config.steps:
            history.append({"step": index + 1, **{k: float(v) for k, v in stats.items()}})
    return params, history
