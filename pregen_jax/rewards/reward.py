"""What ``CiderD`` and ``Bleu`` share: how a row of ids is read, which ids are refused, and how
they are called from any array library or from inside the caller's ``jit``.

Two paths, one rule for ids (0..``max_id``: the vocabulary given, else ``ngrams.MAX_ID``, what
exact keys hold) and image indices (0..images - 1):

- **concrete arrays** (numpy, torch, JAX, lists): an id out of range is a ValueError before the
  jitted call; the batch is padded to a few fixed shapes (``interop``) and the rewards come back
  as the caller's kind of array;
- **traced arrays** (the reward inside the caller's ``jax.jit``, where nothing can be raised):
  a row with an id or image index out of range gets a NaN reward, never a score.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from . import interop
from .grams import ArrayPytree, ImageGrams, SampleGrams, sample_grams
from .ngrams import MAX_ID, check_end, row_ids


def max_id_of(vocab_size: int | None) -> int:
    """The largest id a reward accepts: ``vocab_size - 1``, else ``MAX_ID`` (65,534)."""
    if vocab_size is None:
        return MAX_ID
    if not 1 <= vocab_size <= MAX_ID + 1:
        raise ValueError(f"vocabulary of {vocab_size} ids: exact two-word n-gram keys need 1..{MAX_ID + 1}")
    return int(vocab_size) - 1


def bad_rows(samples: jax.Array, image_index: jax.Array, max_id: int, images: int) -> jax.Array:
    """bool[B]: rows of ``samples: i[B, T]`` holding an id outside 0..max_id, or whose image index
    lies outside 0..images - 1 (compared in the arrays' own types, so nothing wraps first)."""
    ids = jnp.any((samples < 0) | (samples > max_id), 1)
    return ids | (image_index < 0) | (image_index >= images)


class RowReward(ArrayPytree):
    """A reward of rows of ids against their images' references (a pytree; subclasses give
    ``scores(grams, image_index) -> f[B]`` and list ``pad_id``, ``end``, ``max_id`` in ``_STATIC``).

    Rows are read by the rule ``end`` (``ngrams.sentence``): ``"row"`` (the default, as
    self-critical.pytorch's ``array_to_str``: the ids up to and including the first ``pad_id``; a
    row with no ``pad_id``, a label cut at ``seq_length`` or a sample that fills every position,
    has no end token), ``"always"`` (the end token appended where a row has none) or ``"never"``.
    """

    images: ImageGrams
    pad_id: int
    end: str
    max_id: int

    def configure(self, pad_id: int, end: str, vocab_size: int | None) -> None:
        check_end(end)
        self.pad_id, self.end, self.max_id = int(pad_id), str(end), max_id_of(vocab_size)

    @property
    def image_count(self) -> int:
        return self.images.ref_count.shape[0]

    def __call__(self, samples, image_index):
        """samples: i[B, T] (any array with DLPack, or JAX's; padded with ``pad_id``); image_index:
        i[B] -> f[B], each row's reward, as the caller's kind of array (numpy, torch on its
        device, JAX). Ids out of range: a ValueError before the jitted call; traced inside the
        caller's ``jit``: NaN for that row."""
        if interop.is_traced(samples, image_index):
            return self.rewards(samples, image_index, samples.shape[1])
        device = interop.placement(self)
        rows, caller = interop.read_ids(samples, "samples", self.max_id, device)
        index, _ = interop.read_ids(image_index, "image_index", self.image_count - 1, device)
        if rows.ndim != 2 or index.shape != rows.shape[:1]:
            raise ValueError(f"samples {tuple(rows.shape)} and image_index {tuple(index.shape)}: need [B, T] and [B]")
        B, T = rows.shape  # noqa: N806
        padded = (interop.bucket(B), interop.positions(T))
        out = _row_rewards(self, interop.pad_to(rows, padded, self.pad_id), interop.pad_to(index, padded[:1], 0),
                           jnp.int32(T))
        return caller.give(out, B)

    def rewards(self, samples, image_index, width) -> jax.Array:
        """f[B]: the traced reward of ``samples: i[B, T]`` read up to ``width`` (<= T) positions,
        NaN where a row has an id or image index out of range."""
        samples, image_index = jnp.asarray(samples), jnp.asarray(image_index)
        bad = bad_rows(samples, image_index, self.max_id, self.image_count)
        rows = row_ids(jnp.where(bad[:, None], self.pad_id, samples), self.pad_id, self.end, width)
        grams = sample_grams(rows, self.pad_id, self.end, width)
        score = self.scores(grams, jnp.clip(image_index, 0, self.image_count - 1))
        return jnp.where(bad, jnp.nan, score)

    def scores(self, grams: SampleGrams, image_index: jax.Array) -> jax.Array:
        raise NotImplementedError


@jax.jit
def _row_rewards(reward: RowReward, samples, image_index, width):
    return reward.rewards(samples, image_index, width)
