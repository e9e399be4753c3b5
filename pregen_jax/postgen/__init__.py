"""Post-gen metrics: CIDEr-D, BLEU-1..4 and ROUGE-L at array speed (equal to pycocoevalcap to
1e-9; ``backend="coco"`` runs pycocoevalcap itself), METEOR (pycocoevalcap's jar in one warm
JVM), WMD (gensim + GloVe) and SPICE (where Stanford CoreNLP 3.6.0 jars exist).

Functional API: ``score(name, gts, res, **options) -> (corpus, per_image)``;
``score_systems(names, gts, {system: res})`` for many candidate sets against one set of
references; ``score("CIDEr", gts, res, idf_from=all_gts)`` for a subset's images scored as in the
whole set. Every metric keeps pycocoevalcap's ``compute_score(gts, res) -> (corpus, per_image)``
and ``score_blocks`` (each block's corpus score, and per-image scores). The registry
(``names()``, ``availability(options)``, ``make_metrics(names, options)``, ``REGISTRY[name]``'s
facts: ``cache_settings``, ``needs_images``, ``corpus_is_mean``) is the one list of metrics; add
your own with ``register``.
"""
from .api import ARRAY_METRICS, score, score_systems, tokenized
from .base import PostgenMetric, PostgenOptions, check_inputs, score_strata
from .bleu import BLEU
from .cider import CIDEr
from .meteor import METEOR
from .registry import REGISTRY, MetricSet, MetricSpec, availability, check_names, make_metrics, names, register
from .rouge import ROUGE_L
from .spice import SPICE
from .wmd import WMD, read_stopwords, resolve_stopwords

DEFAULT_METRICS = ("METEOR", "CIDEr", "SPICE", "WMD", "Bleu_4", "ROUGE_L")

__all__ = ["ARRAY_METRICS", "BLEU", "CIDEr", "DEFAULT_METRICS", "METEOR", "REGISTRY", "MetricSet", "MetricSpec",
           "PostgenMetric", "PostgenOptions", "ROUGE_L", "SPICE", "WMD", "availability", "check_inputs",
           "check_names", "make_metrics", "names", "read_stopwords", "register", "resolve_stopwords", "score",
           "score_strata", "score_systems", "tokenized"]
