"""REO (Jiang et al. 2019): relevance, extraness and omission of a caption in a shared
image-text space, with a SCAN-style matching model trained here.

Use as a post-gen metric: ``fit_shapes_scorer`` on the built-in data (learned object regions,
InfoNCE matcher), ``fit_scorer`` on any other regions (trains or loads the matching model, estimates the
covariance) and ``ReoScorer.score`` / ``corpus_scores``; or the pieces: ``train_matcher`` (or
``load_matcher``, or any object following ``Matcher``), ``estimate_covariance``,
``score_captions``. See experiments/reo_shapes/ for the check against known scenes (its candidate
captions of known content and the checks on them live there).
"""
from .attention import LAMBDA, attention, context_vectors, pair_scores
from .model import Matcher, MatcherConfig, ScanMatcher, encode_captions, encode_regions, pad_token_ids, shapes_regions
from .scorer import METRIC_NAMES, ReoScorer, fit_scorer, fit_shapes_scorer, load_scorer, save_scorer
from .scores import (
                     Covariance,
                     estimate_covariance,
                     ledoit_wolf,
                     mahalanobis,
                     projection_residual,
                     reo_from_context,
                     score_captions,
                     score_pairs,
)
from .train import MatchTrainConfig, TrainedMatcher, load_matcher, retrieval_recalls, train_matcher, write_retrieval

__all__ = ["LAMBDA", "METRIC_NAMES", "attention", "context_vectors", "encode_captions", "encode_regions",
           "estimate_covariance", "fit_scorer", "fit_shapes_scorer", "ledoit_wolf", "load_matcher", "load_scorer",
           "save_scorer", "mahalanobis", "pad_token_ids", "pair_scores", "projection_residual", "reo_from_context",
           "retrieval_recalls", "score_captions", "score_pairs", "shapes_regions", "train_matcher",
           "write_retrieval", "Covariance", "MatchTrainConfig", "Matcher", "MatcherConfig", "ReoScorer",
           "ScanMatcher", "TrainedMatcher"]
