"""Post-gen metrics from the real toolkits: METEOR, CIDEr-D, BLEU, ROUGE-L (pycocoevalcap),
WMD (gensim + GloVe) and SPICE (where Stanford CoreNLP 3.6.0 jars exist).

Every metric keeps pycocoevalcap's ``compute_score(gts, res) -> (corpus, per_image)`` and adds
``stratum_scores``, which scores each stratum on its block alone. The registry
(``names()``, ``availability(options)``, ``make_metrics(names, options)``) is the one list of
metrics; add your own with ``register``.
"""
from .base import PostgenMetric, PostgenOptions, check_inputs, score_strata
from .bleu import BLEU
from .cider import CIDEr
from .meteor import METEOR
from .registry import REGISTRY, MetricSet, MetricSpec, availability, check_names, make_metrics, names, register
from .rouge import ROUGE_L
from .spice import SPICE
from .wmd import WMD, read_stopwords, resolve_stopwords

DEFAULT_METRICS = ("METEOR", "CIDEr", "SPICE", "WMD", "Bleu_4", "ROUGE_L")

__all__ = ["BLEU", "CIDEr", "DEFAULT_METRICS", "METEOR", "REGISTRY", "MetricSet", "MetricSpec", "PostgenMetric",
           "PostgenOptions", "ROUGE_L", "SPICE", "WMD", "availability", "check_inputs", "check_names",
           "make_metrics", "names", "read_stopwords", "register", "resolve_stopwords", "score_strata"]
