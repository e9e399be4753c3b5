"""The post-gen metric interface: per-image sufficient statistics and their aggregate, with
pycocoevalcap's ``compute_score(gts, res)`` on top, plus strata.

``gts``: image id -> list of reference strings; ``res``: image id -> [one candidate string].
Strings are already tokenised (tokens joined by spaces), so every metric sees the same tokens;
scores are on each toolkit's native scale.

The protocol every metric implements (what significance tests and subsets need):

- ``stats(gts, res) -> f64[images, k]``: each image's sufficient statistics, rows in ``gts``
  order. Any subset or resample of the rows is valid input to ``aggregate``.
- ``aggregate(stats: f64[..., images, k]) -> f64[...]``: the corpus score of the rows, vectorized
  over leading axes (a bootstrap passes ``stats[idx]`` with ``idx: i64[B, n]``).
- per-image scores are ``aggregate(stats[:, None, :])``, the corpus score ``aggregate(stats)``;
  ``compute_score`` is exactly that.

How the corpus score is made is a declared fact (``corpus``): ``"mean"``, the mean of per-image
scores (``k = 1``: CIDEr-D with the scored set's document frequencies held fixed, ROUGE-L, WMD,
SPICE, REO), or ``"summed"``, a function of the column sums (BLEU's clipped counts and lengths,
METEOR's alignment statistics): ``from_sums(sums: f64[..., k], images) -> f64[...]``. Either way
the corpus score depends on the rows through their sum only, so a resample is ``counts @ stats``
(``counts: f64[B, images]``, how often each image was drawn) passed to ``from_sums``.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Literal

import numpy as np

from ..settings import settings

if TYPE_CHECKING:
    import pandas as pd

METRIC_BACKENDS = ("native", "coco")
"""Every metric's backends: ``"native"``, this package's implementation (the default), or ``"coco"``,
the reference toolkit (pycocoevalcap's code and jars; gensim's ``wmdistance`` for WMD)."""
RENAMED_BACKENDS = {"array": "native", "python": "native"}  # the old names (BLEU/CIDEr/ROUGE-L/WMD, METEOR)


def backend_name(backend: str, what: str) -> str:
    """``backend`` as one of ``METRIC_BACKENDS``; an old name (``RENAMED_BACKENDS``) still works, with a
    FutureWarning naming ``what``; anything else is a ValueError."""
    if backend in RENAMED_BACKENDS:
        warnings.warn(f"{what}: backend {backend!r} is deprecated, now called {RENAMED_BACKENDS[backend]!r} "
                      "(every metric's backends are 'native' and 'coco')", FutureWarning, stacklevel=3)
        return RENAMED_BACKENDS[backend]
    if backend not in METRIC_BACKENDS:
        raise ValueError(f"{what} backend must be 'native' or 'coco', got {backend!r}")
    return backend


@settings
class PostgenOptions:
    """What some post-gen metrics need from the machine or the user."""

    stopwords: str = ""     # WMD stop-word file ("" = the 2018 NLTK list in ../shared/data/wmd when present)
    corenlp_dir: str = ""   # SPICE: folder with the Stanford CoreNLP 3.6.0 jars ("" = $PREGEN_JAX_CORENLP)
    reo_model: str = ""     # REO: a scorer folder (matching model + covariance) from experiments/reo_shapes
    # every metric: "native" (this package's: CIDEr, BLEU, ROUGE-L all images at once, WMD POT's solver per
    # pair, METEOR its Python/numba port) or "coco" (the reference toolkit: pycocoevalcap, its METEOR jar in a
    # JVM, gensim's wmdistance); the same numbers either way. "array" is the old name of "native" (deprecated).
    backend: Literal["native", "coco", "array"] = "native"

    def __post_init__(self):
        object.__setattr__(self, "backend", backend_name(self.backend, "[postgen] backend"))


class PostgenMetric:
    """A post-gen metric. Subclasses set ``name`` and the facts below, and implement ``stats`` (and
    ``from_sums`` where ``corpus == "summed"``); ``from_options`` makes one from the registry's options.

    Facts (class attributes, declared once; the registry reads them from the class):
      corpus: ``"mean"`` (the mean of per-image scores) or ``"summed"`` (a function of summed statistics).
      corpus_dependent: an image's score depends on the other images scored with it (CIDEr-D's
        document frequencies), so a block of images is scored on its own for the 2018 strata.
      score_range: (lowest, highest) score.
      needs_java: runs a Java program.
      needs_images: scores captions against the images too (REO): ``bind_images`` first.
      has_stats: gives per-image sufficient statistics (``stats``: every built-in metric). False:
        only its own ``compute_score``, so evaluate gives its scores without intervals or tests
        (``register_metric`` checks that the class implements what it declares).
      releases_gil: ``stats`` spends most of its time outside Python's lock (compiled code that
        releases it, or waiting on another process), so evaluate computes it in a thread beside
        the other metrics.
    """

    name = "metric"
    corpus: Literal["mean", "summed"] = "mean"
    corpus_dependent = False
    score_range: tuple[float, float] = (0.0, 1.0)
    needs_java = False
    needs_images = False
    has_stats = True
    releases_gil = False

    @classmethod
    def from_options(cls, name: str, options: PostgenOptions) -> PostgenMetric:
        """The metric registered as ``name``, made with ``options`` (the registry's factory)."""
        return cls()

    @classmethod
    def apart(cls, name: str, options: PostgenOptions) -> PostgenMetric:
        """``from_options``, computing in a process of its own where the metric can (METEOR's native
        backend: ``make_metrics(..., apart=True)``), so that it neither waits for nor holds this
        process's GIL; the others as ``from_options`` makes them."""
        return cls.from_options(name, options)

    @property
    def corpus_is_mean(self) -> bool:
        return self.corpus == "mean"

    def stats(self, gts: dict, res: dict) -> np.ndarray:
        """f64[images, k]: each image's sufficient statistics, rows in ``gts`` order (inputs checked)."""
        check_inputs(gts, res)
        return self._checked_stats(gts, res)

    def stats_of_tokenized(self, gts: dict, res: dict) -> np.ndarray:
        """``stats`` of inputs the caller checked before tokenizing them: a reference that tokenizes to
        nothing (only punctuation) is scored as the toolkits score it, not refused as input."""
        return self._checked_stats(gts, res)

    def stats_started(self, gts: dict, res: dict) -> Callable[[], np.ndarray]:
        """``stats_of_tokenized(gts, res)``, begun now and given by calling the result, so that the
        caller can score other metrics meanwhile: a metric that ``releases_gil`` computes in a
        thread of its own (METEOR's native backend does its Python part first, in the caller's
        thread), the others compute now."""
        if not self.releases_gil:
            rows = self.stats_of_tokenized(gts, res)
            return lambda: rows
        pool = ThreadPoolExecutor(max_workers=1)
        future = pool.submit(self.stats_of_tokenized, gts, res)
        pool.shutdown(wait=False)  # the thread ends with its one task
        return future.result

    def _checked_stats(self, gts: dict, res: dict) -> np.ndarray:
        """``stats`` of inputs already checked: what a metric implements."""
        raise NotImplementedError(f"{type(self).__name__} does not give per-image statistics")

    def from_sums(self, sums: np.ndarray, images) -> np.ndarray:
        """f64[...]: the corpus score of rows whose statistics sum to ``sums`` (f64[..., k]); ``images``
        the number of rows (an int, or f64[...])."""
        if self.corpus != "mean":
            raise NotImplementedError
        return np.asarray(sums, np.float64)[..., 0] / images

    def aggregate(self, stats: np.ndarray) -> np.ndarray:
        """f64[...]: the corpus score of ``stats`` (f64[..., images, k])."""
        stats = np.asarray(stats, np.float64)
        if self.corpus == "mean":  # numpy's pairwise mean: the float order of np.mean(per_image)
            return stats[..., 0].mean(axis=-1)
        return self.from_sums(stats.sum(axis=-2), stats.shape[-2])

    def per_image(self, stats: np.ndarray) -> np.ndarray:
        """f64[images]: each row's own score, ``aggregate(stats[:, None, :])``."""
        return self.aggregate(np.asarray(stats, np.float64)[:, None, :])

    def compute_score(self, gts: dict, res: dict) -> tuple[float, list[float]]:
        """(corpus score, per-image scores in ``gts`` order): ``aggregate`` of ``stats``."""
        stats = self.stats(gts, res)
        return float(self.aggregate(stats)), self.per_image(stats).tolist()

    def score_blocks(self, gts: dict, res: dict, blocks: list[list]) -> tuple[np.ndarray, np.ndarray]:
        """(f[S] the corpus score of each block (a list of image ids) computed on that block alone,
        f[I] per-image scores over the whole set, in ``gts`` order).

        Where an image's statistics do not depend on the other images, a block's score is the
        aggregate of its images' rows (BLEU's summed counts, METEOR's summed alignments, a mean);
        otherwise (CIDEr-D's document frequencies) the metric runs on the block alone: the 2018 strata.
        """
        stats = self.stats(gts, res)
        if self.corpus_dependent:
            return (np.array([self.compute_score({i: gts[i] for i in block}, {i: res[i] for i in block})[0]
                              for block in blocks]), self.per_image(stats))
        position = {image_id: k for k, image_id in enumerate(gts)}
        return (np.array([self.aggregate(stats[[position[i] for i in block]]) for block in blocks]),
                self.per_image(stats))

    def close(self) -> None:
        """Release external resources (a Java process)."""


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
    import pandas as pd  # here only: scoring itself needs no pandas
    check_inputs(gts, res)
    metrics = getattr(metrics, "metrics", metrics)
    return pd.DataFrame({m.name: np.asarray(m.score_blocks(gts, res, strata)[0], float) for m in metrics})
