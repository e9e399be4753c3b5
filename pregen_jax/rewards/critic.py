# SPDX-FileCopyrightText: 2019 Ruotian Luo
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""Self-critical advantages (Rennie et al. 2017; Luo 2020) on the device: each sampled caption's
reward minus a baseline, as self-critical.pytorch computes them.

How it was written: the rules follow self-critical.pytorch (Ruotian Luo, MIT):
``get_self_critical_reward`` in ``captioning/utils/rewards.py`` (the score of a caption is
``cider_reward_weight * CIDEr-D + bleu_reward_weight * BLEU-4``, a weight of 0 leaving its
scorer out; the baseline of image i's K samples is the score of its greedy caption) and the
``new_self_critical`` loss in ``captioning/modules/losses.py`` (the baseline of a sample is the
mean score of the image's K - 1 other samples). Re-expressed as array operations; no line is copied.

Samples are given as ``i[B * K, T]`` image-major (row r belongs to image r // K, as
``gen_result`` is) or ``i[B, K, T]``; advantages come back in the same layout (``f[B * K]`` or
``f[B, K]``): one per sample, where self-critical.pytorch repeats it over the T positions.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from . import interop
from .bleu import Bleu
from .cider import CiderD
from .grams import ArrayPytree


@jax.tree_util.register_pytree_node_class
class SelfCritical(ArrayPytree):
    """``cider_weight * CIDEr-D + bleu_weight * BLEU-4`` of sampled captions, and their advantages.

    ``cider``: a ``CiderD``; ``bleu``: a ``Bleu`` (order 4), needed when ``bleu_weight > 0``. Both
    must read rows alike (``pad_id``, ``end``) and index the same images. Called on concrete
    arrays (numpy, torch on CPU or GPU, JAX), ids out of range are a ValueError and results come
    back as the caller's kind; traced inside the caller's ``jit``, a bad row's reward is NaN (and
    so are the advantages that use it). A pytree, to pass to jitted functions.
    """

    def __init__(self, cider: CiderD | None, bleu: Bleu | None = None, *, cider_weight: float = 1.0,
                 bleu_weight: float = 0.0):
        if (cider_weight > 0 and cider is None) or (bleu_weight > 0 and bleu is None):
            raise ValueError("a positive weight needs its scorer: cider_weight needs cider, bleu_weight needs bleu")
        if cider_weight < 0 or bleu_weight < 0 or cider_weight + bleu_weight == 0:
            raise ValueError(f"weights {cider_weight}, {bleu_weight}: need >= 0 and one > 0")
        used = [r for r, w in ((cider, cider_weight), (bleu, bleu_weight)) if w > 0]
        if len({(r.pad_id, r.end, r.image_count) for r in used}) > 1:
            raise ValueError("cider and bleu must read rows alike (pad_id, end) and index the same images")
        self.cider = cider if cider_weight > 0 else None
        self.bleu = bleu if bleu_weight > 0 else None
        self.cider_weight, self.bleu_weight = float(cider_weight), float(bleu_weight)

    _ARRAYS = ("cider", "bleu")
    _STATIC = ("cider_weight", "bleu_weight")

    @property
    def scorers(self) -> list:
        return [r for r in (self.cider, self.bleu) if r is not None]

    def scores(self, samples, image_index, width) -> jax.Array:
        """f[N]: the traced mixed score of ``samples: i[N, T]`` (read up to ``width``) for ``image_index: i[N]``."""
        total = 0.0
        for reward, weight in ((self.cider, self.cider_weight), (self.bleu, self.bleu_weight)):
            if reward is not None:
                total = total + weight * reward.rewards(samples, image_index, width)
        return total

    def __call__(self, samples, image_index):
        """samples: i[N, T]; image_index: i[N] -> f[N], each row's mixed score (``get_scores``)."""
        if interop.is_traced(samples, image_index):
            return self.scores(samples, image_index, samples.shape[1])
        rows, index, caller, _ = self._read(samples, image_index, None)
        N, T = rows.shape  # noqa: N806
        padded = (interop.bucket(N), interop.positions(T))
        out = _scores(self, interop.pad_to(rows, padded, self._pad), interop.pad_to(index, padded[:1], 0),
                      jnp.int32(T))
        return caller.give(out, N)

    def advantage_over_greedy(self, samples, greedy, image_index):
        """samples: i[B * K, T] or i[B, K, T]; greedy: i[B, T'] each image's greedy caption;
        image_index: i[B] -> advantages f[B * K] or f[B, K]: score(sample) - score(its image's
        greedy caption) (``get_self_critical_reward``)."""
        return self._advantages(samples, image_index, greedy)

    def advantage_over_mean(self, samples, image_index):
        """samples: i[B * K, T] or i[B, K, T], K >= 2; image_index: i[B] -> advantages f[B * K] or
        f[B, K]: score(sample) - the mean score of its image's K - 1 other samples (``new_self_critical``)."""
        return self._advantages(samples, image_index, None)

    def grouped(self, samples, image_index, greedy, widths) -> jax.Array:
        """f[B, K]: the traced advantages of ``samples: i[B, K, T]`` (greedy: i[B, T'] or None for
        the mean of the others); ``widths``: (the samples', the greedy captions') real widths."""
        B, K, T = samples.shape  # noqa: N806
        score = self.scores(samples.reshape(B * K, T), jnp.repeat(image_index, K), widths[0]).reshape(B, K)
        if greedy is None:
            if K < 2:
                raise ValueError("the mean of the other samples needs K >= 2 samples per image")
            return score - (score.sum(1, keepdims=True) - score) / (K - 1)
        return score - self.scores(greedy, image_index, widths[1])[:, None]

    @property
    def _pad(self) -> int:
        return self.scorers[0].pad_id

    def _read(self, samples, image_index, greedy):
        """(samples, image_index, the caller, greedy or None): checked, on the tables' device."""
        device = interop.placement(self)
        high = min(r.max_id for r in self.scorers)
        rows, caller = interop.read_ids(samples, "samples", high, device)
        index, _ = interop.read_ids(image_index, "image_index", self.scorers[0].image_count - 1, device)
        if greedy is not None:
            greedy, _ = interop.read_ids(greedy, "greedy", high, device)
        return rows, index, caller, greedy

    def _advantages(self, samples, image_index, greedy):
        if interop.is_traced(samples, image_index, greedy):
            grouped = samples if samples.ndim == 3 else samples.reshape(image_index.shape[0], -1, samples.shape[-1])
            widths = (samples.shape[-1], None if greedy is None else greedy.shape[-1])
            return self.grouped(grouped, image_index, greedy, widths).reshape(samples.shape[:-1])
        rows, index, caller, greedy = self._read(samples, image_index, greedy)
        B = index.shape[0]  # noqa: N806
        if rows.ndim not in (2, 3) or index.ndim != 1 or (rows.ndim == 2 and rows.shape[0] % max(B, 1)):
            raise ValueError(f"samples {tuple(rows.shape)}, image_index {tuple(index.shape)}: need [B * K, T] or "
                             "[B, K, T] samples and [B] image indices")
        layout = rows.shape[:-1]
        rows = rows.reshape(B, -1, rows.shape[-1])
        if greedy is not None and (greedy.ndim != 2 or greedy.shape[0] != B):
            raise ValueError(f"greedy {tuple(greedy.shape)}: need [B, T] with B = {B}")
        greedy_width = 0 if greedy is None else greedy.shape[1]
        Bp, Tp = interop.bucket(B), interop.positions(max(rows.shape[2], greedy_width))  # noqa: N806
        pad = self._pad
        padded_greedy = None if greedy is None else interop.pad_to(greedy, (Bp, Tp), pad)
        widths = (jnp.int32(rows.shape[2]), jnp.int32(greedy_width))
        out = _grouped(self, interop.pad_to(rows, (Bp, rows.shape[1], Tp), pad), interop.pad_to(index, (Bp,), 0),
                       padded_greedy, widths)
        return caller.give(out, B, layout)


@jax.jit
def _scores(critic: SelfCritical, samples, image_index, width):
    return critic.scores(samples, image_index, width)


@jax.jit
def _grouped(critic: SelfCritical, samples, image_index, greedy, widths):
    return critic.grouped(samples, image_index, greedy, widths)
