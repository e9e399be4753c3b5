"""Retrieval measured as the data allows: a caption of the shapes dataset is often true of many
images, so besides plain recall (only the caption's own image, or its own captions, count) it
gives ambiguity-aware recall (any image the caption is true of counts as a hit) and mean
average precision over all true pairs, both directions, each beside its chance level.

All functions take scores f[I, C] (image x caption), the image of each caption i[C], and,
for the ambiguity-aware measures, truth bool[C, I] (caption c is true of image i; its own
image must be among them).
"""
from __future__ import annotations

import numpy as np

from .. import io

RECALL_AT = (1, 5, 10)
DIRECTIONS = ("image_to_caption", "caption_to_image")


def _average_precision(scores: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """f64[Q]: average precision of each query row over its relevant items (ties pessimistic)."""
    ap = np.zeros(len(scores))
    for q in range(len(scores)):
        rel = np.flatnonzero(relevant[q])
        if not len(rel):
            continue
        s = scores[q]
        rank = np.sort((s[None, :] >= s[rel][:, None]).sum(axis=1))  # pessimistic ranks of the relevant items
        ap[q] = np.mean(np.arange(1, len(rel) + 1) / np.maximum(rank, np.arange(1, len(rel) + 1)))
    return ap


def _recall(scores: np.ndarray, relevant: np.ndarray, ks) -> dict[int, float]:
    """Share of query rows with a relevant item in their top k (ties count against)."""
    best = np.where(relevant, scores, -np.inf).max(axis=1)
    rank = (np.where(relevant, -np.inf, scores) >= best[:, None]).sum(axis=1)  # irrelevant items at least as high
    return {k: float(np.mean(rank < k)) for k in ks}


def _chance_recall(relevant: np.ndarray, ks) -> dict[int, float]:
    """Expected recall at k of a random ranking: 1 - C(n - r, k) / C(n, k) per query, averaged."""
    n = relevant.shape[1]
    r = relevant.sum(axis=1)
    out = {}
    for k in ks:
        miss = np.ones(len(r))
        for j in range(min(k, n)):
            miss *= np.clip((n - r - j) / (n - j), 0, None)
        out[k] = float(np.mean(1 - miss))
    return out


def _chance_ap(relevant: np.ndarray) -> float:
    """Expected average precision of a random ranking of n items with r relevant (Bestgen 2015):
    (r - 1) / (n - 1) + (n - r) H_n / (n (n - 1)), averaged over the queries."""
    n = relevant.shape[1]
    r = relevant.sum(axis=1)
    harmonic = np.sum(1.0 / np.arange(1, n + 1))
    exact = ((r - 1) / max(n - 1, 1)) + (n - r) / (n * max(n - 1, 1)) * harmonic  # Bestgen 2015
    return float(np.mean(np.where(r > 0, exact, 0.0)))


def retrieval_measures(scores: np.ndarray, caption_image: np.ndarray, truth: np.ndarray | None = None,
                       ks=RECALL_AT) -> dict[str, dict]:
    """{direction: {"recall": {k}, "recall_chance": {k}, and given ``truth``: "recall_ambiguous",
    "recall_ambiguous_chance", "map", "map_chance", "map_plain", "map_plain_chance"}}.

    Plain: image_to_caption hits when any of the image's own captions is in the top k;
    caption_to_image when the caption's own image is. Ambiguity-aware: any caption true of the
    image, any image the caption is true of. mAP: over those true pairs (``map``) and over the
    own pairs only (``map_plain``).
    """
    scores = np.asarray(scores, np.float64)
    images, captions = scores.shape
    own = caption_image[None, :] == np.arange(images)[:, None]          # [I, C]
    out = {}
    for direction, s, plain in (("image_to_caption", scores, own), ("caption_to_image", scores.T, own.T)):
        entry = {"recall": _recall(s, plain, ks), "recall_chance": _chance_recall(plain, ks),
                 "map_plain": float(_average_precision(s, plain).mean()), "map_plain_chance": _chance_ap(plain)}
        if truth is not None:
            true = truth.T if direction == "image_to_caption" else truth     # [queries, items]
            true = true | plain
            entry.update({"recall_ambiguous": _recall(s, true, ks), "recall_ambiguous_chance": _chance_recall(true, ks),
                          "map": float(_average_precision(s, true).mean()), "map_chance": _chance_ap(true)})
        out[direction] = entry
    return out


def recall_sum(measures: dict, key: str = "recall") -> float:
    """Sum over both directions and every k of one kind of recall."""
    return float(sum(sum(m[key].values()) for m in measures.values()))


def write_retrieval_measures(measures: dict, path) -> None:
    """retrieval.tsv: one row per direction and measure, with its chance level beside it."""
    lines = ["direction\tmeasure\tvalue\tchance"]
    for direction, m in measures.items():
        for name in ("recall", "recall_ambiguous"):
            if name in m:
                for k, value in m[name].items():
                    lines.append(f"{direction}\t{name}_at_{k}\t{value:.4f}\t{m[name + '_chance'][k]:.4f}")
        for name in ("map_plain", "map"):
            if name in m:
                lines.append(f"{direction}\t{name}\t{m[name]:.4f}\t{m[name + '_chance']:.4f}")
    io.write_text("\n".join(lines) + "\n", path)
