"""Region-to-word attention of SCAN (Lee et al. 2018) as REO uses it (Jiang et al. 2019, eqs. 1-3).

For region i of an image and word j of a caption:

    sim(v_i, h_j) = max(0, cos(v_i, h_j)) / sqrt(sum_k max(0, cos(v_k, h_j))^2)   (eq. 3, over regions k)
    alpha_ij      = softmax_j(lambda * sim(v_i, h_j))                           (eq. 2, over the words)
    a_i           = sum_j alpha_ij h_j                                          (eq. 1)

``a_i`` is the caption's context vector for region i. Padded words are masked out of the
softmax; eq. 3 normalises each word over the regions, so padding never touches a real word.
Shapes: regions ``f[..., K, D]``, words ``f[..., L, D]``, word_mask ``bool[..., L]``; leading
axes broadcast, so one call covers a whole test set.
"""
from __future__ import annotations

import jax.numpy as jnp

LAMBDA = 9.0  # REO's smoothing factor lambda
EPS = 1e-8


def safe_norm(x, axis: int = -1, keepdims: bool = False):
    """Euclidean norm with a finite gradient at zero (padding rows and empty regions are zero vectors)."""
    return jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims) + EPS ** 2)


def l2_normalise(x, axis: int = -1):
    return x / (safe_norm(x, axis, keepdims=True) + EPS)


def region_mask(regions):
    """bool[..., K]: the regions that are real. A region vector of zeros is padding (an image with
    fewer object regions than the widest one); every mean over regions skips it."""
    return jnp.any(regions != 0, axis=-1)


def region_mean(values, mask):
    """Mean of values f[..., K] over the real regions (``mask`` bool[..., K], broadcast)."""
    mask = jnp.broadcast_to(mask, values.shape)
    return jnp.sum(jnp.where(mask, values, 0.0), axis=-1) / jnp.maximum(jnp.sum(mask, axis=-1), 1)


def _attention_from_cosines(cos, word_mask, lam: float):
    """cos f[..., K, L] (region x word cosines) -> alpha f[..., K, L], rows summing to one over real words."""
    positive = jnp.maximum(cos, 0.0)
    sim = positive / (safe_norm(positive, axis=-2, keepdims=True) + EPS)
    logits = jnp.where(word_mask[..., None, :], lam * sim, -jnp.inf)
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    weights = jnp.where(word_mask[..., None, :], jnp.exp(logits), 0.0)
    # a caption with no real word (batch padding) gets zero weights instead of NaN
    return weights / jnp.maximum(jnp.sum(weights, axis=-1, keepdims=True), EPS)


def attention(regions, words, word_mask, lam: float = LAMBDA):
    """alpha f[..., K, L]: how much region i attends to word j (eqs. 2-3)."""
    cos = jnp.einsum("...kd,...ld->...kl", l2_normalise(regions), l2_normalise(words))
    return _attention_from_cosines(cos, word_mask, lam)


def context_vectors(regions, words, word_mask, lam: float = LAMBDA):
    """a f[..., K, D]: the caption's context vector for every region (eq. 1)."""
    return jnp.einsum("...kl,...ld->...kd", attention(regions, words, word_mask, lam), words)


def pair_scores(regions, words, word_mask, lam: float = LAMBDA):
    """SCAN's image-caption similarity for every pair: f[B, C] = mean_i cos(v_i, a_i) over real regions.

    regions f[B, K, D], words f[C, L, D], word_mask bool[C, L]. Computed without materialising
    the B x C x K x D context vectors: v.a_i = sum_j alpha_ij (v.h_j) and |a_i|^2 = alpha_i G alpha_i
    with G the caption's word Gram matrix, so memory is B x C x K x L.
    """
    unit_regions = l2_normalise(regions)
    dots = jnp.einsum("bkd,cld->bckl", unit_regions, words)
    word_norms = safe_norm(words) + EPS
    alpha = _attention_from_cosines(dots / word_norms[None, :, None, :], word_mask[None], lam)
    along = jnp.sum(alpha * dots, axis=-1)
    gram = jnp.einsum("cld,cmd->clm", words, words)
    norm2 = jnp.einsum("bckl,clm,bckm->bck", alpha, gram, alpha)
    cosines = along / (jnp.sqrt(jnp.maximum(norm2, 0.0) + EPS ** 2) + EPS)
    return region_mean(cosines, region_mask(regions)[:, None, :])
