# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption / pycocoevalcap, bleu/bleu_scorer.py: Hao Fang, Tsung-Yi Lin; BleuScorer first written by David Chiang)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Sentence BLEU of sampled token ids against their images' references, on the device, inside ``jit``.

How it was written: the rules follow coco-caption's ``bleu/bleu_scorer.py`` (``cook_refs``,
``cook_test``, ``BleuScorer.compute_score`` with ``option="closest"``: Hao Fang and Tsung-Yi Lin's
version of David Chiang's BLEU scorer), as ``postgen/bleu.py`` does, re-expressed as array operations over token ids (no line is copied): each candidate
n-gram's count clipped by its largest count in any one reference; each precision
(correct + 1e-15) / (guess + 1e-9); BLEU-n the n-th root of the running product; the brevity
penalty exp(1 - 1 / ratio) where ratio = (testlen + 1e-15) / (reflen + 1e-9) < 1, with the
closest reference length (ties to the shorter). This is the per-sentence score self-critical.pytorch
mixes into its reward (``bleu_reward_weight``). Under coco-caption's ``bleu/`` licence (MIT).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from .cider import reward_dtype
from .grams import ImageGrams, SampleGrams, padded
from .ngrams import MAX_ORDER
from .reward import RowReward
from .tables import ReferenceTable

TINY, SMALL = 1e-15, 1e-9


@jax.tree_util.register_pytree_node_class
class Bleu(RowReward):
    """BLEU-``order`` (1..4, default 4) of each sample against its image's references.

    Built and called like ``CiderD`` (``references[i]``: image i's id sequences; ``pad_id``;
    ``end``, the same rules for reading rows; ``vocab_size``; ids out of range refused the same
    way): ``reward(samples i[B, T], image_index i[B]) -> f[B]``; a pytree, to pass to jitted functions.
    """

    def __init__(self, references, *, order: int = MAX_ORDER, pad_id: int = 0, end: str = "row",
                 dtype=None, vocab_size: int | None = None):
        if not 1 <= order <= MAX_ORDER:
            raise ValueError(f"BLEU order {order}: must be 1..{MAX_ORDER}")
        self.configure(pad_id, end, vocab_size)
        table = ReferenceTable.build(references, pad_id, end, self.max_id)
        self.images = ImageGrams.of(table)
        self.max_tf = padded(table.tf.max(1), jnp.int32)                                 # [E]
        self.ref_words = jnp.asarray(table.words, jnp.int32)                             # [images, R]
        self.one = jnp.ones((), reward_dtype(dtype))  # carries the float type through the pytree
        self.order = int(order)

    _ARRAYS = ("images", "max_tf", "ref_words", "one")
    _STATIC = ("order", "pad_id", "end", "max_id")

    def scores(self, grams: SampleGrams, image_index: jax.Array) -> jax.Array:
        """f[B]: BLEU of samples already split into n-grams (``sample_grams``)."""
        dtype = self.one.dtype
        entry, found = self.images.find(grams, image_index)
        clipped = jnp.where(found, jnp.minimum(grams.tf, self.max_tf[entry]), 0)
        correct = jnp.sum(clipped, -1).astype(dtype)                                    # [B, 4]
        testlen = grams.lengths
        guess = jnp.maximum(testlen[:, None] - jnp.arange(MAX_ORDER)[None, :], 0).astype(dtype)
        bleu = jnp.prod(((correct + TINY) / (guess + SMALL))[:, :self.order], -1) ** (1.0 / self.order)
        reflen = closest_length(self.ref_words[image_index], self.images.ref_count[image_index], testlen)
        ratio = (testlen.astype(dtype) + TINY) / (reflen.astype(dtype) + SMALL)
        return jnp.where(ratio < 1, bleu * jnp.exp(1 - 1 / ratio), bleu)


def closest_length(ref_words: jax.Array, ref_count: jax.Array, testlen: jax.Array) -> jax.Array:
    """ref_words: i32[B, R]; ref_count: i32[B]; testlen: i32[B] -> i32[B], the reference length
    closest to testlen (ties to the shorter: ``min((abs(l - testlen), l))``)."""
    real = jnp.arange(ref_words.shape[1])[None, :] < ref_count[:, None]
    distance = jnp.where(real, jnp.abs(ref_words - testlen[:, None]), jnp.iinfo(jnp.int32).max)
    nearest = jnp.min(distance, 1, keepdims=True)
    return jnp.min(jnp.where(real & (distance == nearest), ref_words, jnp.iinfo(jnp.int32).max), 1)

