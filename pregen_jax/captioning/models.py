"""The four caption-generator architectures of Tanti, Gatt, Camilleri (2018), in Flax Linen.

    init : image -> RNN initial state;          words -> RNN -> softmax
    pre  : image is the RNN's first input word;   words -> RNN -> softmax
    par  : [word ; image] at every RNN step      -> RNN -> softmax
    merge: words -> RNN; [RNN state ; image]      -> softmax   (image kept out of the RNN)

The module exposes two methods, ``start`` (image -> decoder state) and ``step`` (state,
previous token -> state, logits), so that teacher forcing, greedy and beam search are all
``jax.lax`` loops over the same ``step`` (see ``pregen_jax.captioning.decode``). Each of the
four is registered (``registry``) under its name, all four with the RNN family's sizes,
``RnnConfig`` (``[models.rnn]``; the transformer has its own, ``transformer.TransformerConfig``).

pre centres its image features on the training split's mean (``with_feature_mean``) before
projecting them, and never drops the image word. CNN features are non-negative, so their
mean is a large image-independent component; early in training every image wants the same
first RNN state, and Adam, moving each of the thousands of projection weights by the learning
rate in the same direction, grows that component by ~lr * sum(features) per step until the
image step's tanh saturates to the same value for every image; then almost no gradient
reaches the image and pre settles as a language model (one caption for nearly every image of
the demo: CIDEr 0.30 where it now reaches 0.81-0.85; experiments/pre_image_word/ has the
measurements). init, par and merge do not pass the image through a single saturating step
and are left as they were.
"""
from __future__ import annotations

from typing import Literal

import flax.linen as nn
import jax
import jax.numpy as jnp

from ..settings import PositiveInt, Probability, as_dict, settings
from .registry import register_architecture

RNN_ARCHITECTURES = ("init", "pre", "par", "merge")
CELLS = {"gru": nn.GRUCell, "lstm": nn.OptimizedLSTMCell, "rnn": nn.SimpleCell}
FEATURE_STATS = "feature_stats"  # variable collection set from the training features, never trained


@settings
class RnnConfig:
    """Sizes of the RNN caption generators, ``[models.rnn]`` (defaults as the 2018 models, scaled down)."""

    cell: Literal["gru", "lstm", "rnn"] = "gru"
    embed_size: PositiveInt = 256        # word embedding size
    hidden_size: PositiveInt = 256       # RNN state size
    image_size: PositiveInt = 256        # projected image size for par and merge (init/pre: RNN/embedding size)
    dropout: Probability = 0.5           # on word embeddings and RNN outputs (never on the image, as in 2018)
    learn_init_state: bool = False       # learnable initial RNN state (pre, par, merge)
    normalize_image: bool = False        # L2-normalise the image feature vector first

    def record(self) -> dict:
        """The sizes as plain data, for checkpoints and cache keys."""
        return as_dict(self)

    @classmethod
    def from_record(cls, record: dict) -> RnnConfig:
        return cls(**record)


def prepare_features(features, config):
    """features: f[B, D] as the model reads them: L2-normalised when the config (any family's) says so."""
    if config.normalize_image:
        features = features / jnp.maximum(jnp.linalg.norm(features, axis=-1, keepdims=True), 1e-8)
    return features


class CentredDense(nn.Module):
    """A Dense layer (``nn.Dense``'s parameters) on its input minus a stored mean.

    The mean lives in the ``FEATURE_STATS`` collection: zeros at init, set once from the
    training features by ``with_feature_mean``; a stop-gradient keeps the optimiser off it.
    """

    features: int

    @nn.compact
    def __call__(self, x):
        mean = self.variable(FEATURE_STATS, "mean", jnp.zeros, (x.shape[-1],), jnp.float32)
        kernel = self.param("kernel", nn.initializers.lecun_normal(), (x.shape[-1], self.features))
        bias = self.param("bias", nn.initializers.zeros, (self.features,))
        return (x - jax.lax.stop_gradient(mean.value)) @ kernel + bias


def with_feature_mean(variables: dict, config, train_features) -> dict:
    """``variables`` with pre's feature mean set from ``train_features: f[N, D]`` (others unchanged)."""
    if FEATURE_STATS not in variables:
        return variables
    mean = jnp.mean(prepare_features(jnp.asarray(train_features, jnp.float32), config), axis=0)
    return {**variables, FEATURE_STATS: {"image_proj": {"mean": mean}}}


class Captioner(nn.Module):
    """A caption generator over ``vocab_size`` tokens (id 0 = the edge token that starts and ends captions)."""

    arch: str
    config: RnnConfig
    vocab_size: int

    def setup(self):
        if self.arch not in RNN_ARCHITECTURES:
            raise ValueError(f"unknown RNN architecture {self.arch!r}; choose from {', '.join(RNN_ARCHITECTURES)}")
        cfg = self.config
        self.embed = nn.Embed(self.vocab_size, cfg.embed_size)
        image_width = {"init": cfg.hidden_size, "pre": cfg.embed_size}.get(self.arch, cfg.image_size)
        self.image_proj = CentredDense(image_width) if self.arch == "pre" else nn.Dense(image_width)
        self.cell = CELLS[cfg.cell](features=cfg.hidden_size)
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Dense(self.vocab_size)
        if self._learns_init_state:
            self.init_state = self.param("init_state", nn.initializers.zeros, (cfg.hidden_size,))

    @property
    def _learns_init_state(self) -> bool:
        return self.config.learn_init_state and self.arch != "init"  # init's state is the image

    def _image(self, features):
        return nn.relu(self.image_proj(prepare_features(features, self.config)))

    def _zero_state(self, batch):
        h = self.init_state[None].repeat(batch, 0) if self._learns_init_state else jnp.zeros(
            (batch, self.config.hidden_size))
        return (h, h) if self.config.cell == "lstm" else h

    def start(self, features, train: bool = False):
        """features: f[B, D] -> decoder state (RNN carry, image vector)."""
        image = self._image(features)
        if self.arch == "init":
            carry = (image, image) if self.config.cell == "lstm" else image
        else:
            carry = self._zero_state(features.shape[0])
        if self.arch == "pre":  # the image is the first input word, undropped like par's and merge's
            carry, _ = self.cell(carry, image)
        return carry, image

    def start_decoding(self, features, max_len: int):
        """Decoding's first state: ``start`` (an RNN needs no room for ``max_len`` tokens)."""
        return self.start(features)

    def step(self, state, tokens, train: bool = False):
        """state, tokens: i32[B] (previous token) -> (state, logits: f[B, V])."""
        carry, image = state
        word = self.drop(self.embed(tokens), deterministic=not train)
        rnn_in = jnp.concatenate([word, image], -1) if self.arch == "par" else word
        carry, hidden = self.cell(carry, rnn_in)
        hidden = self.drop(hidden, deterministic=not train)
        if self.arch == "merge":
            hidden = jnp.concatenate([hidden, image], -1)
        return (carry, image), self.out(hidden)

    def teacher_forced(self, features, inputs, train: bool = False):
        """features: f[B, D]; inputs: i32[B, L] -> logits f[B, L, V], the same as ``step`` over
        every position (to float rounding). Only the cell runs position by position: embedding,
        dropout and the output layer run once over all positions, which cut a demo-size training
        step (GRU 128, batch 128 x 16) from 54-59 ms to 42-44 ms on this project's CPU."""
        carry, image = self.start(features, train)
        words = self.drop(self.embed(inputs), deterministic=not train)
        if self.arch == "par":
            words = jnp.concatenate([words, jnp.broadcast_to(image[:, None], (*inputs.shape, image.shape[-1]))], -1)
        cell_loop = nn.scan(lambda cell, carry, x: cell(carry, x), variable_broadcast="params",
                            split_rngs={"params": False}, in_axes=1, out_axes=1)
        _, hidden = cell_loop(self.cell, carry, words)
        hidden = self.drop(hidden, deterministic=not train)
        if self.arch == "merge":
            hidden = jnp.concatenate([hidden, jnp.broadcast_to(image[:, None], (*inputs.shape, image.shape[-1]))], -1)
        return self.out(hidden)

    def __call__(self, features, tokens, train: bool = False):
        """Initialisation entry point: features f[B, D], tokens i32[B] -> logits f[B, V]."""
        return self.step(self.start(features, train), tokens, train)[1]


for _arch in RNN_ARCHITECTURES:
    register_architecture(_arch, config=RnnConfig,
                          description=f"{_arch} (Tanti et al. 2018), an RNN of [models.rnn] cell")(Captioner)
