# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
#   (coco-caption / pycocoevalcap, cider/cider_scorer.py: Ramakrishna Vedantam, Tsung-Yi Lin)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: BSD-2-Clause-Views
"""CIDEr-D of sampled token ids against their images' references, on the device, inside ``jit``.

How it was written: the rules (tf-idf weights tf * (log(images) - log(max(1, df))), the clipped
similarity min(w_c, w_r) * w_r, division by both norms only when both are non-zero, the
Gaussian penalty on the difference of the *bigram* counts with sigma 6, the mean over the four
orders of the sum over references, divided by the number of references, x10) follow
coco-caption's ``cider/cider_scorer.py`` (``compute_cider``: Ramakrishna Vedantam and Tsung-Yi
Lin), as ``postgen/cider.py`` does, and
the document frequencies follow the cached mode of self-critical.pytorch's ``ciderD`` (counted
over distinct images, the idf numerator log(number of images)), re-expressed as array
operations over token ids (no line is copied). So this file is under coco-caption's licence
(BSD-2-Clause-Views; docs/licensing.md).

The end token: samples and references alike are read as self-critical.pytorch's ``array_to_str``
reads rows (``end="row"``, the default): the first ``pad_id`` ends a row and counts as a word; a
row without one has no end token. ``end="always"`` appends it where a row has none (as
``prepro_ngrams`` does to every training reference), ``end="never"`` leaves it out; the document
frequencies built from the references are read by the same rule (a cached ``DocumentFrequency``
keeps the rule it was counted with).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .grams import ImageGrams, SampleGrams, padded
from .ngrams import MAX_ORDER, search_keys, search_steps, split_key
from .reward import RowReward
from .tables import DocumentFrequency, ReferenceTable

SIGMA = 6.0


def reward_dtype(dtype=None):
    """The reward's float type: ``dtype``, else float64 under jax's x64 mode and float32 without."""
    return jnp.dtype(dtype) if dtype is not None else jnp.result_type(float)


@jax.tree_util.register_pytree_node_class
class CiderD(RowReward):
    """CIDEr-D of samples against the references of their images (pycocoevalcap's scale, x10).

    ``references[i]``: the id sequences of image i (lists, or padded label rows as
    self-critical.pytorch's ``data['gts'][i]``; at least one per image), read by the rule ``end``:
    ``"row"`` (default, ``array_to_str``: up to and including the first ``pad_id``; a row with no
    ``pad_id`` has no end token), ``"always"`` (the end token appended where a row has none) or
    ``"never"``. Ids 0..``vocab_size - 1`` (at most 65,534). ``document_frequency``: a
    ``DocumentFrequency`` from another corpus (e.g. ``DocumentFrequency.from_pickle`` of a
    ``*-idxs.p``); by default the references' own, over distinct images.

    ``reward(samples i[B, T], image_index i[B]) -> f[B]`` in ``dtype`` (float32, or float64 under
    x64): samples are read by the same rule; numpy, torch (CPU or GPU, through DLPack) or JAX in,
    the same kind out; an id out of range is a ValueError before the jitted call, or a NaN reward
    when traced inside the caller's ``jit``. The reward is a pytree: pass it to a jitted function
    as an argument (its tables are then inputs, not constants compiled in).
    """

    def __init__(self, references, *, pad_id: int = 0, end: str = "row",
                 document_frequency: DocumentFrequency | None = None, sigma: float = SIGMA, dtype=None,
                 vocab_size: int | None = None):
        self.configure(pad_id, end, vocab_size)
        dtype = reward_dtype(dtype)
        table = ReferenceTable.build(references, pad_id, end, self.max_id)
        df = document_frequency or DocumentFrequency.from_references(references, pad_id, end)
        ref_len = np.log(float(df.images))
        idf = ref_len - np.log(np.maximum(1.0, df.lookup(table.keys).astype(np.float64)))
        weight = table.tf * idf[:, None]                                          # f64[E, R]
        image = np.repeat(np.arange(len(table.start)), table.count)
        norm2 = np.zeros((len(table.start), MAX_ORDER, weight.shape[1]))
        np.add.at(norm2, (image, table.order - 1), weight ** 2)
        df_hi, df_lo = split_key(df.keys)
        self.images = ImageGrams.of(table)
        self.df_hi, self.df_lo = padded(df_hi, jnp.uint32), padded(df_lo, jnp.uint32)
        self.idf = padded(ref_len - np.log(np.maximum(1.0, df.df.astype(np.float64))), dtype)
        self.ref_len = jnp.asarray(ref_len, dtype)
        self.weight = padded(weight, dtype)
        self.ref_norm = jnp.asarray(np.sqrt(norm2), dtype)                             # [images, 4, R]
        self.ref_bigrams = jnp.asarray(np.maximum(table.words - 1, 0), dtype)          # [images, R]
        self.df_size, self.df_steps = len(df.keys), search_steps(len(df.keys))
        self.sigma = float(sigma)

    _ARRAYS = ("images", "df_hi", "df_lo", "idf", "ref_len", "weight", "ref_norm", "ref_bigrams")
    _STATIC = ("df_size", "df_steps", "pad_id", "end", "max_id", "sigma")

    def scores(self, grams: SampleGrams, image_index: jax.Array) -> jax.Array:
        """f[B]: CIDEr-D of samples already split into n-grams (``sample_grams``)."""
        dtype = self.idf.dtype
        at, in_corpus = search_keys(self.df_hi, self.df_lo, grams.hi, grams.lo, 0, self.df_size, self.df_steps)
        idf = jnp.where(in_corpus, self.idf[at], self.ref_len)
        w_c = jnp.where(grams.first, grams.tf.astype(dtype) * idf, 0.0)                 # [B, 4, T]
        norm_c = jnp.sqrt(jnp.sum(w_c ** 2, -1))                                         # [B, 4]
        entry, found = self.images.find(grams, image_index)
        w_r = jnp.where(found[..., None], self.weight[entry], 0.0)                       # [B, 4, T, R]
        numerator = jnp.sum(jnp.minimum(w_c[..., None], w_r) * w_r, 2)                   # [B, 4, R]
        norm_r = self.ref_norm[image_index]
        both = (norm_c[..., None] != 0) & (norm_r != 0)
        similarity = jnp.where(both, numerator / jnp.where(both, norm_c[..., None] * norm_r, 1.0), numerator)
        delta = jnp.maximum(grams.lengths - 1, 0).astype(dtype)[:, None] - self.ref_bigrams[image_index]
        similarity = similarity * jnp.exp(-(delta ** 2) / (2 * self.sigma ** 2))[:, None, :]
        count = self.images.ref_count[image_index]
        real = jnp.arange(similarity.shape[-1])[None, :] < count[:, None]                 # [B, R]
        summed = jnp.sum(jnp.where(real[:, None, :], similarity, 0.0), -1)              # [B, 4]
        return jnp.mean(summed, -1) / count.astype(dtype) * 10.0

