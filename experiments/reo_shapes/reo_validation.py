"""Checking REO against known content (this experiment's, moved out of ``pregen_jax.reo``): rank correlations with tuple counts, and the paper's
Figure 3 check that the residual vectors point at the extra or missing phrase."""
from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
from known_captions import CandidateCaption
from scipy import stats

from pregen_jax import io
from pregen_jax.datasets import TOKENIZER_NAME
from pregen_jax.reo.attention import LAMBDA, context_vectors, region_mask, region_mean
from pregen_jax.reo.model import Matcher, encode_captions, encode_regions
from pregen_jax.reo.scores import GROUND_TRUTHS, MEASURES, cosine, embed_references, projection_residual

AGAINST = ("extra", "omitted", "correct")
EXPECTED_SIGN = {("E", "extra"): -1, ("O", "omitted"): -1, ("R", "correct"): +1}  # what REO should show


@dataclasses.dataclass(frozen=True)
class Correlation:
    measure: str
    ground_truth: str
    against: str
    spearman_rho: float
    p_value: float
    n: int


def _centred(values: np.ndarray, images: np.ndarray) -> np.ndarray:
    """values minus the mean of their image's values."""
    sums = np.bincount(images, weights=values)
    return values - (sums / np.maximum(np.bincount(images), 1))[images]


def correlations(scores: dict[str, np.ndarray], candidates: list[CandidateCaption],
                 within_image: bool = False) -> list[Correlation]:
    """Spearman rho of every score (R/E/O x image/refs) with the candidates' extra, omitted and correct tuples.

    Pooled over all candidates, or ``within_image``: scores and counts minus their image's mean
    first, so only differences between captions of the same image count (scenes with more
    objects have more correct tuples and longer captions; this takes that out).
    """
    counts = {name: np.array([getattr(c, name) for c in candidates], np.float64) for name in AGAINST}
    images = np.array([c.image for c in candidates])
    if within_image:
        counts = {name: _centred(values, images) for name, values in counts.items()}
    rows = []
    for ground in GROUND_TRUTHS:
        for measure in MEASURES:
            values = scores[f"{measure}_{ground}"]
            if within_image:
                values = _centred(values, images)
            for against in AGAINST:
                rho, p = stats.spearmanr(values, counts[against])
                rows.append(Correlation(measure, ground, against, float(rho), float(p), len(values)))
    return rows


def write_correlations(rows: list[Correlation], path) -> None:
    """reo_validation.tsv: measure, ground_truth, against, spearman_rho, n (then p_value, expected_sign, tokenizer)."""
    lines = ["measure\tground_truth\tagainst\tspearman_rho\tn\tp_value\texpected_sign\ttokenizer"]
    for r in rows:
        sign = EXPECTED_SIGN.get((r.measure, r.against))
        lines.append(f"{r.measure}\t{r.ground_truth}\t{r.against}\t{r.spearman_rho:.4f}\t{r.n}\t{r.p_value:.3g}\t"
                     f"{'' if sign is None else ('+' if sign > 0 else '-')}\t{TOKENIZER_NAME}")
    io.write_text("\n".join(lines) + "\n", path)


# ------------------------------------------------------------------------ Figure 3


@functools.partial(jax.jit, static_argnums=(8,))
def _residual_cosines(v, cand, cand_mask, phrase, phrase_mask, control, control_mask, refs, lam):
    """Per candidate: mean over regions of cos(residual_i, a_i of a phrase), for the phrase and a control.

    v f[C, K, D]; cand/phrase/control f[C, L, D] with masks; refs = (words f[C, R, L, D], mask
    bool[C, R, L], valid bool[C, R]). Returns f[C] arrays keyed extra|omit _ image|refs _
    phrase|control: the extraness residual a_perp or the omission residual g_perp, with the
    image or the references (averaged over them) as ground truth, against the phrase or the control.
    """
    ref_words, ref_mask, ref_valid = refs
    a = context_vectors(v, cand, cand_mask, lam)
    a_phrase = context_vectors(v, phrase, phrase_mask, lam)
    a_control = context_vectors(v, control, control_mask, lam)
    a_refs = context_vectors(v[:, None], ref_words, ref_mask, lam)  # [C, R, K, D]
    count = jnp.maximum(ref_valid.sum(axis=1), 1)

    def ref_mean(x):
        return jnp.sum(jnp.where(ref_valid, x, 0.0), axis=1) / count

    real = region_mask(v)
    out = {}
    for name, target in (("phrase", a_phrase), ("control", a_control)):
        out[f"extra_image_{name}"] = region_mean(cosine(projection_residual(a, v), target), real)
        out[f"omit_image_{name}"] = region_mean(cosine(projection_residual(v, a), target), real)
        a_perp_refs = projection_residual(a[:, None], a_refs)
        g_perp_refs = projection_residual(a_refs, a[:, None])
        out[f"extra_refs_{name}"] = ref_mean(region_mean(cosine(a_perp_refs, target[:, None]), real[:, None]))
        out[f"omit_refs_{name}"] = ref_mean(region_mean(cosine(g_perp_refs, target[:, None]), real[:, None]))
    return out


def figure3_cosines(matcher: Matcher, params, regions: np.ndarray, references, candidates: list[CandidateCaption],
                    lam: float = LAMBDA) -> dict[str, dict[str, np.ndarray]]:
    """The paper's Figure 3 check on candidates with exactly one error and a correct object.

    "extra": candidates with one extra phrase and nothing left out, residual a_perp;
    "omitted": candidates with one object left out and no extras, residual g_perp.
    For each, per candidate, the mean over regions of cos(residual_i, a_i of the error phrase
    alone) ("phrase") and of a correctly stated object's phrase alone ("control"), with the
    image and with the references as ground truth. Returns {"extra"|"omitted": {key: f[n]}}.
    """
    chosen = {
        "extra": [c for c in candidates if c.omit == 0 and len(c.extra_phrases) == 1 and c.kept_phrases],
        "omitted": [c for c in candidates if c.omit == 1 and c.extras == 0 and c.kept_phrases],
    }
    v_all = encode_regions(matcher, params, regions)
    out = {}
    for kind, group in chosen.items():
        if not group:
            continue
        images = np.array([c.image for c in group])
        phrases = [c.extra_phrases[0] if kind == "extra" else c.missing_phrases[0] for c in group]
        cand = encode_captions(matcher, params, [c.tokens for c in group], "figure 3 candidates")
        phrase = encode_captions(matcher, params, phrases, "figure 3 phrases")
        control = encode_captions(matcher, params, [c.kept_phrases[0] for c in group], "figure 3 controls")
        refs = embed_references(matcher, params, [references[n] for n in images])
        result = _residual_cosines(v_all[images], *cand, *phrase, *control, refs, float(lam))
        prefix = "extra" if kind == "extra" else "omit"
        out[kind] = {key.replace(f"{prefix}_", ""): np.asarray(value, np.float64)
                     for key, value in result.items() if key.startswith(prefix)}
    return out


# ------------------------------------------------------------------------ specificity and decomposition


def count_arrays(candidates: list[CandidateCaption], truths: list[set[tuple]] | None = None) -> dict[str, np.ndarray]:
    """f64[C] extra, omitted and correct tuple counts of every candidate: against its scene
    (``truths`` None: the counts it carries) or against ``truths[image]`` (e.g. the union of
    the tuples its image's references state)."""
    if truths is None:
        rows = [(c.correct, c.extra, c.omitted) for c in candidates]
    else:
        rows = [c.counts_against(truths[c.image]) for c in candidates]
    arr = np.array(rows, np.float64).reshape(-1, 3)
    return {"correct": arr[:, 0], "extra": arr[:, 1], "omitted": arr[:, 2]}


def _standardised(x: np.ndarray) -> np.ndarray:
    sd = x.std()
    return (x - x.mean()) / sd if sd > 0 else x - x.mean()


def specificity(values: np.ndarray, counts: dict[str, np.ndarray], images: np.ndarray) -> dict[str, float]:
    """Within-image least squares of a score on its extra and omitted counts together, all centred
    on their image's mean and standardised: {"beta_extra", "beta_omitted", "r2"}. A score specific
    to extra content has |beta_extra| well above |beta_omitted|; one for omissions the reverse."""
    y = _standardised(_centred(np.asarray(values, np.float64), images))
    x = np.stack([_standardised(_centred(counts["extra"], images)),
                  _standardised(_centred(counts["omitted"], images))], axis=1)
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ beta
    r2 = 1 - residual.var() / y.var() if y.var() > 0 else 0.0
    return {"beta_extra": float(beta[0]), "beta_omitted": float(beta[1]), "r2": float(r2)}


def _rho(x, y) -> float:
    if np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    return float(stats.spearmanr(x, y)[0])


def metric_table(scores: dict[str, np.ndarray], candidates: list[CandidateCaption],
                 counts: dict[str, dict[str, np.ndarray]]) -> list[dict]:
    """One row per score: Spearman rho with the extra, omitted and correct counts, pooled and within
    image, and the within-image regression (``specificity``).

    ``scores``: name -> f[C] (REO's ``R_image`` ... and any other metric: CIDEr, METEOR, BLEU-4
    per candidate); ``counts``: ground truth -> ``count_arrays``. REO's ``*_image`` scores are read
    against the "image" counts and ``*_refs`` against the "refs" counts; any other score against both.
    """
    images = np.array([c.image for c in candidates])
    rows = []
    for name, values in scores.items():
        values = np.asarray(values, np.float64)
        grounds = [g for g in counts if name.endswith(f"_{g}")] or list(counts)
        for ground in grounds:
            row = {"score": name, "ground_truth": ground, "n": len(values)}
            for against in AGAINST:
                row[f"rho_{against}"] = _rho(values, counts[ground][against])
                row[f"rho_{against}_within"] = _rho(_centred(values, images), _centred(counts[ground][against], images))
            row.update(specificity(values, counts[ground], images))
            rows.append(row)
    return rows


def decomposition_table(scores: dict[str, np.ndarray], candidates: list[CandidateCaption],
                        counts: dict[str, dict[str, np.ndarray]]) -> list[dict]:
    """How much of E and O the cosine (R's part) and the vector norms carry, per ground truth.

    For E and O and each factor of ``scores.reo_parts_from_context`` (``abs_cos``, the Euclidean
    norms, ``E_over_cos`` / ``O_over_cos``: the score without its cosine): Spearman rho of the
    factor with extra and omitted counts, within image, the within-image regression, and the
    within-image rho of the factor with the score itself. If E and O follow the counts only
    through ``abs_cos`` (the same factor in both), the equations cannot tell extra from omitted
    content in this space, whatever it is trained to be.
    """
    images = np.array([c.image for c in candidates])
    rows = []
    for ground in ("image", "refs"):
        for measure in ("E", "O"):
            total = np.asarray(scores[f"{measure}_{ground}"], np.float64)
            parts = {"whole": total, "abs_cos": scores[f"abs_cos_{ground}"],
                     "norms": scores[f"{measure}_over_cos_{ground}"],
                     "norm_a": scores[f"norm_a_{ground}"], "norm_g": scores[f"norm_g_{ground}"],
                     "R": scores[f"R_{ground}"]}
            for part, values in parts.items():
                values = np.asarray(values, np.float64)
                row = {"measure": measure, "ground_truth": ground, "part": part,
                       "rho_extra_within": _rho(_centred(values, images), _centred(counts[ground]["extra"], images)),
                       "rho_omitted_within": _rho(_centred(values, images),
                                                  _centred(counts[ground]["omitted"], images)),
                       "rho_with_score_within": _rho(_centred(values, images), _centred(total, images))}
                row.update(specificity(values, counts[ground], images))
                rows.append(row)
    return rows


def write_rows(rows: list[dict], path) -> None:
    """A list of flat dicts as a TSV (floats to 4 decimals), with the tokenizer named."""
    header = list(rows[0]) + ["tokenizer"] if rows else ["tokenizer"]
    lines = ["\t".join(header)]
    for r in rows:
        lines.append("\t".join(f"{r[h]:.4f}" if isinstance(r.get(h), float) else str(r.get(h, TOKENIZER_NAME))
                               for h in header))
    io.write_text("\n".join(lines) + "\n", path)
