"""The post-gen metric interface: pycocoevalcap's ``compute_score(gts, res)``, plus strata.

``gts``: image id -> list of reference strings; ``res``: image id -> [one candidate string].
Strings are already tokenised (tokens joined by spaces) with the package tokenizer, so every
metric sees the same tokens; scores are on each toolkit's native scale.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from ..settings import settings


@settings
class PostgenOptions:
    """What some post-gen metrics need from the machine or the user."""

    stopwords: str = ""     # WMD stop-word file ("" = the 2018 NLTK list in ../shared/data/wmd when present)
    corenlp_dir: str = ""   # SPICE: folder with the Stanford CoreNLP 3.6.0 jars ("" = $PREGEN_JAX_CORENLP)
    reo_model: str = ""     # REO: a scorer folder (matching model + covariance) from experiments/reo_shapes
    # CIDEr, BLEU, ROUGE-L: "array" (all images at once) or "coco" (pycocoevalcap); WMD: "array" (POT's
    # solver called per pair) or "coco" (gensim's wmdistance); the same numbers either way
    backend: Literal["array", "coco"] = "array"


class PostgenMetric:
    """A post-gen metric. Subclasses set ``name`` and implement ``compute_score``."""

    name = "metric"
    corpus_is_mean = True       # the corpus score is the mean of the per-image scores
    corpus_dependent = False    # an image's score depends on the other images scored with it

    def compute_score(self, gts: dict, res: dict) -> tuple[float, list[float]]:
        """(corpus score, per-image scores in ``gts`` order)."""
        raise NotImplementedError

    def score_blocks(self, gts: dict, res: dict, blocks: list[list]) -> tuple[np.ndarray, np.ndarray]:
        """(f[S] the corpus score of each block (a list of image ids) computed on that block alone,
        f[I] per-image scores over the whole set, in ``gts`` order).

        A block's score is the mean of its images' scores where the corpus score is a mean and an
        image's score does not depend on the other images; otherwise (CIDEr-D's document
        frequencies, BLEU's summed counts) the metric runs on the block alone: the 2018 strata.
        """
        _, per_image = self.compute_score(gts, res)
        if self.corpus_is_mean and not self.corpus_dependent:
            return _block_means(gts, per_image, blocks), np.asarray(per_image, float)
        return (np.array([self.compute_score({i: gts[i] for i in block}, {i: res[i] for i in block})[0]
                          for block in blocks]), np.asarray(per_image, float))

    def close(self) -> None:
        """Release external resources (a Java process)."""


def _block_means(gts: dict, per_image, blocks: list[list]) -> np.ndarray:
    """f[S]: the mean per-image score of each block (``per_image`` in ``gts`` order)."""
    by_id = dict(zip(gts, per_image))
    return np.array([np.mean([by_id[i] for i in block]) for block in blocks])


def check_inputs(gts: dict, res: dict, source: str = "captions") -> None:
    """Clear errors for the inputs every metric shares."""
    if set(gts) != set(res):
        missing = sorted(set(gts) ^ set(res), key=str)[:3]
        raise ValueError(f"{source}: references and candidates cover different images (e.g. {missing})")
    bad = [i for i, refs in gts.items() if not refs or len(res[i]) != 1 or not any(map(str.strip, refs))]
    if bad:
        image_id, refs = bad[0], gts[bad[0]]
        if not refs:
            raise ValueError(f"{source}: image {image_id} has no references")
        if len(res[image_id]) != 1:
            raise ValueError(f"{source}: image {image_id} needs exactly one candidate, got {len(res[image_id])}")
        raise ValueError(f"{source}: image {image_id} has only empty references")


def score_strata(metrics, gts: dict, res: dict, strata: list[list]) -> pd.DataFrame:
    """One row per stratum (a list of image ids), one column per metric (a list or a ``MetricSet``)."""
    check_inputs(gts, res)
    metrics = getattr(metrics, "metrics", metrics)
    return pd.DataFrame({m.name: np.asarray(m.score_blocks(gts, res, strata)[0], float) for m in metrics})


def file_hash(path: str) -> str:
    """sha256 of a file (a jar, a scorer), worked out once per process while the file is unchanged."""
    stat = Path(path).stat()
    return _file_hash(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _file_hash(path: str, mtime_ns: int, size: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
