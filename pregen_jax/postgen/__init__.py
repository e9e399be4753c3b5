"""Post-gen metrics from the real toolkits: METEOR, CIDEr-D, BLEU, ROUGE-L (pycocoevalcap),
WMD (gensim + GloVe) and SPICE (where CoreNLP 3.6.0 jars exist).

Every metric has pycocoevalcap's ``compute_score(gts, res) -> (corpus, per_image)`` and a
``stratum_scores`` that scores each stratum on its block alone.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from .base import PostgenMetric, check_inputs
from .coco import BLEU, CIDEr, METEOR, ROUGE_L
from .spice import SPICE
from .wmd import WMD, read_stopwords

METRICS = {"METEOR": METEOR, "CIDEr": CIDEr, "SPICE": SPICE, "WMD": WMD, "Bleu_1": BLEU, "Bleu_2": BLEU,
           "Bleu_3": BLEU, "Bleu_4": BLEU, "ROUGE_L": ROUGE_L}
DEFAULT_METRICS = ("METEOR", "CIDEr", "SPICE", "WMD", "Bleu_4", "ROUGE_L")


@dataclasses.dataclass
class MetricSet:
    """The metrics that could be started, and one line per metric that could not."""

    metrics: list[PostgenMetric]
    unavailable: dict[str, str]

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def close(self) -> None:
        for metric in self.metrics:
            metric.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def availability(corenlp_dir=None) -> dict[str, tuple[bool, str]]:
    """Whether each metric can run on this machine, and why (not)."""
    out = {}
    for name, cls in METRICS.items():
        out[name] = cls.availability(corenlp_dir) if cls is SPICE else cls.availability()
    return out


def make_metrics(names=DEFAULT_METRICS, stopwords=frozenset(), corenlp_dir=None) -> MetricSet:
    """Start the named metrics; an unavailable one is recorded with its reason, not faked."""
    metrics, unavailable = [], {}
    for name in names:
        if name not in METRICS:
            raise ValueError(f"unknown post-gen metric {name!r}; choose from {sorted(METRICS)}")
        cls = METRICS[name]
        ok, why = cls.availability(corenlp_dir) if cls is SPICE else cls.availability()
        if not ok:
            unavailable[name] = why
            continue
        if cls is BLEU:
            metrics.append(BLEU(int(name[-1])))
        elif cls is WMD:
            metrics.append(WMD(stopwords))
        elif cls is SPICE:
            metrics.append(SPICE(corenlp_dir))
        else:
            metrics.append(cls())
    return MetricSet(metrics, unavailable)


def score_strata(metric_set: MetricSet, gts: dict, res: dict, strata: list[list]) -> pd.DataFrame:
    """One row per stratum (a list of image ids), one column per available metric."""
    check_inputs(gts, res)
    return pd.DataFrame({m.name: np.asarray(m.stratum_scores(gts, res, strata), float) for m in metric_set.metrics})


__all__ = ["BLEU", "CIDEr", "DEFAULT_METRICS", "METEOR", "METRICS", "MetricSet", "PostgenMetric", "ROUGE_L",
           "SPICE", "WMD", "availability", "check_inputs", "make_metrics", "read_stopwords", "score_strata"]
