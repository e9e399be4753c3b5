"""REO's three scores (Jiang et al. 2019, eqs. 4-9): relevance, extraness, omission.

For candidate C, ground truth g_i per region i (the region vector v_i, "image", or a
reference's context vector a_i^R, "references"), and C's context vectors a_i = a_i^C:

    R = mean_i cos(a_i, g_i)                                              (eq. 4)
    E = mean_i d(a_i, a_i_perp),  a_i_perp = a_i - proj_{g_i} a_i         (eqs. 5-7)
    O = mean_i d(g_i, g_i_perp),  g_i_perp = g_i - proj_{a_i} g_i         (eqs. 8-9)

d is the Mahalanobis distance, d(p, q) = sqrt((p - q)' S^-1 (p - q)). So E is the length (in
the S^-1 metric) of the part of a_i that lies along g_i: the paper (section 2.2) reads a
small d as "a_i_perp is close to a_i, the context is mostly extra", hence "the higher this
metric is, the less extra information the caption contains", and the same for O: higher O,
less missing. This module keeps that direction: higher E = less extra, higher O = less omitted.
With the references as ground truth every score is averaged over the image's references.

S is not specified by the paper. ``estimate_covariance`` takes it from the context vectors of
training references, with Ledoit-Wolf shrinkage towards a scaled identity (the shrinkage is
estimated from the data and recorded); ``Covariance.identity`` gives the Euclidean distance.
"""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from .attention import EPS, LAMBDA, context_vectors, region_mask, region_mean, safe_norm
from .model import Matcher, encode_captions, encode_regions

MEASURES = ("R", "E", "O")
GROUND_TRUTHS = ("image", "refs")


@dataclasses.dataclass(frozen=True)
class Covariance:
    """S of the Mahalanobis distance, its inverse, and where it came from."""

    matrix: np.ndarray       # f64[D, D]
    precision: np.ndarray    # f64[D, D], S^-1
    shrinkage: float | None  # Ledoit-Wolf weight of the scaled identity (None: not estimated)
    source: str

    @classmethod
    def identity(cls, size: int) -> Covariance:
        eye = np.eye(size)
        return cls(eye, eye, None, "identity (Euclidean distance)")

    @classmethod
    def from_matrix(cls, matrix: np.ndarray, source: str, shrinkage: float | None = None) -> Covariance:
        matrix = np.asarray(matrix, np.float64)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"covariance ({source}) must be a square matrix, got shape {matrix.shape}")
        eigenvalues = np.linalg.eigvalsh(matrix)
        if eigenvalues.min() <= 0:
            raise ValueError(f"covariance ({source}) is not positive definite (smallest eigenvalue "
                             f"{eigenvalues.min():.3g}); use shrinkage or the identity")
        return cls(matrix, np.linalg.inv(matrix), shrinkage, source)


def ledoit_wolf(samples: np.ndarray) -> tuple[np.ndarray, float]:
    """(shrunk covariance f64[D, D], shrinkage) of samples f[N, D] (Ledoit and Wolf 2004).

    S = (1 - s) * empirical + s * mu * I with mu = trace(empirical) / D and the shrinkage s
    that minimises the expected Frobenius loss, estimated as in scikit-learn's ``ledoit_wolf``.
    """
    x = np.asarray(samples, np.float64)
    if x.ndim != 2 or len(x) < 2:
        raise ValueError(f"Ledoit-Wolf needs samples f[N >= 2, D], got shape {x.shape}")
    n, size = x.shape
    x = x - x.mean(axis=0)
    empirical = x.T @ x / n
    mu = np.trace(empirical) / size
    x2 = x ** 2
    delta_ = np.sum(empirical ** 2)                      # ||X'X / n||_F^2
    beta_ = np.sum(x2.T @ x2) / n                          # sum_k ||x_k x_k'||_F^2 / n
    beta = (beta_ / n - delta_ / n) / size
    delta = (delta_ - 2 * mu * np.trace(empirical) + size * mu ** 2) / size
    beta = min(beta, delta)
    shrinkage = 0.0 if beta == 0 else float(beta / delta)
    return (1 - shrinkage) * empirical + shrinkage * mu * np.eye(size), shrinkage


def projection_residual(x, onto):
    """x - proj_onto(x), row-wise over the last axis (eqs. 5 and 8); zero ``onto`` leaves x unchanged."""
    length2 = jnp.sum(onto * onto, axis=-1, keepdims=True)
    nonzero = length2 > 0
    coefficient = jnp.where(nonzero, jnp.sum(x * onto, axis=-1, keepdims=True) / jnp.where(nonzero, length2, 1.0), 0.0)
    return x - coefficient * onto


def mahalanobis(p, q, precision):
    """d(p, q) over the last axis (eq. 7)."""
    diff = p - q
    return jnp.sqrt(jnp.maximum(jnp.einsum("...d,de,...e->...", diff, precision, diff), 0.0))


def cosine(x, y):
    return jnp.sum(x * y, axis=-1) / (safe_norm(x) * safe_norm(y) + EPS)


def reo_from_context(candidate, ground, precision, mask=None):
    """(R, E, O) f[...] from context vectors ``candidate`` and ground truth ``ground``, both f[..., K, D],
    averaged over the regions where ``mask`` bool[..., K] (broadcast; default: all) holds."""
    mask = jnp.ones(candidate.shape[:-1], bool) if mask is None else mask
    relevance = region_mean(cosine(candidate, ground), mask)
    extraness = region_mean(mahalanobis(candidate, projection_residual(candidate, ground), precision), mask)
    omission = region_mean(mahalanobis(ground, projection_residual(ground, candidate), precision), mask)
    return relevance, extraness, omission



def reo_parts_from_context(candidate, ground, precision, mask=None):
    """The factors E and O are products of, per region (region means returned, f[...] each):

        E_i = |cos(a_i, g_i)| * |a_i| * |g_i|_S / |g_i|      O_i = |cos(a_i, g_i)| * |g_i| * |a_i|_S / |a_i|

    (|x|_S = sqrt(x' S^-1 x)): ``abs_cos`` (what R measures, unsigned), ``norm_a`` and ``norm_g``
    (Euclidean lengths), and ``E_over_cos`` / ``O_over_cos`` (E_i and O_i without the cosine:
    what the norms carry). With the identity covariance E_over_cos = |a_i| and O_over_cos = |g_i|.
    """
    mask = jnp.ones(candidate.shape[:-1], bool) if mask is None else mask

    def s_norm(x):
        return jnp.sqrt(jnp.maximum(jnp.einsum("...d,de,...e->...", x, precision, x), 0.0))
    norm_a, norm_g = safe_norm(candidate), safe_norm(ground)
    return {"abs_cos": region_mean(jnp.abs(cosine(candidate, ground)), mask),
            "norm_a": region_mean(norm_a, mask), "norm_g": region_mean(norm_g, mask),
            "E_over_cos": region_mean(norm_a * s_norm(ground) / (norm_g + EPS), mask),
            "O_over_cos": region_mean(norm_g * s_norm(candidate) / (norm_a + EPS), mask)}


@functools.partial(jax.jit, static_argnums=(8, 9))
def _reo_batch(regions, cand_words, cand_mask, ref_words, ref_mask, ref_valid, image_of, precision, lam,
               parts=False):
    """Every candidate's scores in one call (and with ``parts`` their factors, ``reo_parts_from_context``).

    regions f[I, K, D]; cand_words f[C, L, D], cand_mask bool[C, L]; ref_words f[I, R, L', D],
    ref_mask bool[I, R, L'], ref_valid bool[I, R] (padding references are False); image_of i32[C].
    """
    v = regions[image_of]
    real = region_mask(v)                                                            # [C, K]
    a_cand = context_vectors(v, cand_words, cand_mask, lam)                          # [C, K, D]
    r_img, e_img, o_img = reo_from_context(a_cand, v, precision, real)
    a_refs = context_vectors(regions[:, None], ref_words, ref_mask, lam)[image_of]   # [C, R, K, D]
    r_ref, e_ref, o_ref = reo_from_context(a_cand[:, None], a_refs, precision, real[:, None])  # [C, R]
    valid = ref_valid[image_of]
    count = jnp.maximum(valid.sum(axis=1), 1)
    mean = lambda x: jnp.sum(jnp.where(valid, x, 0.0), axis=1) / count
    out = {"R_image": r_img, "E_image": e_img, "O_image": o_img,
           "R_refs": mean(r_ref), "E_refs": mean(e_ref), "O_refs": mean(o_ref)}
    if parts:
        for key, value in reo_parts_from_context(a_cand, v, precision, real).items():
            out[f"{key}_image"] = value
        for key, value in reo_parts_from_context(a_cand[:, None], a_refs, precision, real[:, None]).items():
            out[f"{key}_refs"] = mean(value)
    return out


def embed_references(matcher: Matcher, params, references: list[list[list[str]]], source: str = "references"):
    """references[n][r] token lists -> (words f[I, R, L, D], mask bool[I, R, L], valid bool[I, R])."""
    for n, refs in enumerate(references):
        if not refs:
            raise ValueError(f"{source}: image {n} has no reference captions")
    most = max(len(refs) for refs in references)
    flat = [tokens for refs in references for tokens in refs]
    words, mask = encode_captions(matcher, params, flat, source)
    slots = np.array([n * most + r for n, refs in enumerate(references) for r in range(len(refs))])
    grid_words = jnp.zeros((len(references) * most, *words.shape[1:]), words.dtype).at[slots].set(words)
    grid_mask = jnp.zeros((len(references) * most, mask.shape[1]), bool).at[slots].set(mask)
    valid = np.zeros(len(references) * most, bool)
    valid[slots] = True
    return (grid_words.reshape(len(references), most, *words.shape[1:]),
            grid_mask.reshape(len(references), most, -1), jnp.asarray(valid.reshape(len(references), most)))


def score_pairs(matcher: Matcher, params, regions: np.ndarray, candidates: list[list[str]],
                references: list[list[list[str]]], covariance: Covariance, image_of=None,
                lam: float = LAMBDA, batch_size: int | None = None, parts: bool = False) -> dict[str, np.ndarray]:
    """REO scores of candidate captions, each against its image and that image's references.

    regions f[I, K, Dr] (raw region features, encoded by the matcher); candidates: token lists;
    references[n][r]: token lists of image n; image_of i[C]: the image of each candidate
    (default: candidate n belongs to image n). Returns f64[C] arrays R_image, E_image, O_image,
    R_refs, E_refs, O_refs. All candidates go through one jit-compiled call unless
    ``batch_size`` splits them (for memory: the call holds C x R x K x D reference context vectors).
    ``parts``: also the factors E and O are products of (``reo_parts_from_context``), keyed
    ``<part>_image`` and ``<part>_refs``.
    """
    if len(references) != len(regions):
        raise ValueError(f"{len(regions)} images of regions but {len(references)} reference lists")
    image_of = np.arange(len(candidates)) if image_of is None else np.asarray(image_of, np.int32)
    if len(image_of) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(image_of)} image indices")
    if len(candidates) == 0:
        return {f"{m}_{g}": np.zeros(0) for g in GROUND_TRUTHS for m in MEASURES}
    if image_of.min() < 0 or image_of.max() >= len(regions):
        raise ValueError(f"candidate image indices must lie in [0, {len(regions)})")
    v = encode_regions(matcher, params, regions)
    if covariance.precision.shape != (v.shape[-1],) * 2:
        raise ValueError(f"covariance is {covariance.precision.shape[0]}-dimensional but the matcher's space has "
                         f"{v.shape[-1]} dimensions")
    ref_words, ref_mask, ref_valid = embed_references(matcher, params, references)
    cand_words, cand_mask = encode_captions(matcher, params, candidates, "candidate captions")
    precision = jnp.asarray(covariance.precision, v.dtype)
    size = batch_size or len(candidates)
    chunks = []
    for start in range(0, len(candidates), size):
        part = slice(start, start + size)
        chunks.append(_reo_batch(v, cand_words[part], cand_mask[part], ref_words, ref_mask, ref_valid,
                                 jnp.asarray(image_of[part]), precision, float(lam), parts))
    return {key: np.concatenate([np.asarray(c[key], np.float64) for c in chunks]) for key in chunks[0]}


def score_captions(matcher: Matcher, params, regions: np.ndarray, candidates: list[list[str]],
                   references: list[list[list[str]]], covariance: Covariance,
                   lam: float = LAMBDA) -> dict[str, np.ndarray]:
    """Per-image REO scores of one generated caption per image: f64[I] arrays R_image, E_image,
    O_image, R_refs, E_refs, O_refs (a corpus score is the mean over images).

    For a post-gen metric of a split: regions of its images f[I, K, Dr], candidates[n] the
    caption generated for image n, references[n] its reference token lists (alnum-lower tokens).
    """
    if len(candidates) != len(regions):
        raise ValueError(f"{len(candidates)} candidate captions for {len(regions)} images (one per image needed)")
    return score_pairs(matcher, params, regions, candidates, references, covariance, None, lam)


def estimate_covariance(matcher: Matcher, params, regions: np.ndarray, captions: list[list[list[str]]],
                        lam: float = LAMBDA, max_images: int = 2000, seed: int = 0) -> Covariance:
    """S from the context vectors a_i^R of training references (one reference per image, every
    region, up to ``max_images`` images), with Ledoit-Wolf shrinkage."""
    rng = np.random.default_rng(seed)
    chosen = np.sort(rng.permutation(len(regions))[:max_images])
    picks = [captions[n][int(rng.integers(len(captions[n])))] for n in chosen]
    v = encode_regions(matcher, params, regions[chosen])
    words, mask = encode_captions(matcher, params, picks, "covariance captions")
    context = np.asarray(jax.jit(context_vectors, static_argnums=3)(v, words, mask, float(lam)))
    real = np.asarray(region_mask(v))
    matrix, shrinkage = ledoit_wolf(context[real])
    source = (f"Ledoit-Wolf (shrinkage {shrinkage:.4f}) over {int(real.sum())} context vectors "
              f"of {len(chosen)} training references (one per image, all its {context.shape[1]}"
              f"{'' if real.all() else ' or fewer'} regions)")
    return Covariance.from_matrix(matrix, source, shrinkage)
