"""Post-gen metrics: CIDEr-D, BLEU-1..4 and ROUGE-L at array speed (equal to pycocoevalcap to
1e-9), METEOR (this package's port of the jar, its statistics equal to the jar's), WMD (gensim +
GloVe) and SPICE (where Stanford CoreNLP 3.6.0 jars exist). Every metric's backend is
``"native"`` (default) or ``"coco"`` (the reference toolkit: pycocoevalcap, its METEOR jar in one
warm JVM, gensim's ``wmdistance``).

Every metric exposes per-image sufficient statistics ``stats(gts, res) -> f64[images, k]`` and
``aggregate(stats) -> corpus score`` (of any subset or resample of the rows; ``base.py``), with
pycocoevalcap's ``compute_score(gts, res) -> (corpus, per_image)`` and ``score_blocks`` on top.
Functional API: ``score(name, gts, res, **options) -> (corpus, per_image)``;
``score_systems(names, gts, {system: res})`` for many candidate sets against one set of
references; ``score("CIDEr", gts, res, idf_from=all_gts)`` for a subset's images scored as in the
whole set. The registry (``metric_names()``, ``metric_availability(options)``,
``make_metrics(names, options)``, ``REGISTRY[name]``'s facts, read from the metric's class) is the
one list of metrics; each metric registers itself where it is defined, and you add your own with
``register_metric``.
"""
# Imported in the order the metrics register (the column order of tables): METEOR, CIDEr, SPICE,
# WMD, Bleu_1..4, ROUGE_L, the REO scores.
from .meteor import METEOR  # isort: skip
from .cider import CIDEr  # isort: skip
from .spice import SPICE  # isort: skip
from .wmd import WMD, read_stopwords, resolve_stopwords  # isort: skip
from .bleu import BLEU  # isort: skip
from .rouge import ROUGE_L  # isort: skip
from . import reo  # noqa: F401  isort: skip  (registers the REO scores)
from .diversity import DIVERSITY, diversity_metric  # isort: skip
from . import selfcider  # noqa: F401  isort: skip  (registers Self_CIDEr among the diversity metrics)
from .api import ARRAY_METRICS, score, score_systems, tokenized
from .base import PostgenMetric, PostgenOptions, check_inputs, score_strata
from .registry import (
                       REGISTRY,
                       MetricSet,
                       MetricSpec,
                       check_metric_names,
                       make_metrics,
                       metric_availability,
                       metric_names,
                       register_metric,
)

DEFAULT_METRICS = ("METEOR", "CIDEr", "SPICE", "WMD", "Bleu_4", "ROUGE_L")

__all__ = ["ARRAY_METRICS", "BLEU", "CIDEr", "DEFAULT_METRICS", "DIVERSITY", "METEOR", "REGISTRY", "MetricSet", "MetricSpec",
           "PostgenMetric", "PostgenOptions", "ROUGE_L", "SPICE", "WMD", "check_inputs", "check_metric_names", "diversity_metric",
           "make_metrics", "metric_availability", "metric_names", "read_stopwords", "register_metric",
           "resolve_stopwords", "score", "score_strata", "score_systems", "tokenized"]
