"""REO (Jiang et al. 2019): relevance, extraness and omission of a caption in a shared
image-text space, with a SCAN-style matching model trained here.

Use: ``train_matcher`` (or ``load_matcher``, or any object following ``Matcher``), then
``estimate_covariance`` and ``score_captions``. See experiments/reo_shapes/ for the check
against the built-in dataset's known scenes.
"""
from .attention import LAMBDA, attention, context_vectors, pair_scores
from .captions import Candidate, count_tuples, make_candidate, make_candidates, scene_tuples
from .model import Matcher, MatcherConfig, ScanMatcher, encode_captions, encode_regions, pad_token_ids, shapes_regions
from .scores import (Covariance, estimate_covariance, ledoit_wolf, mahalanobis, projection_residual,
                     reo_from_context, score_captions, score_pairs)
from .train import (MatchTrainConfig, TrainedMatcher, load_matcher, retrieval_recalls, train_matcher,
                    write_retrieval)
from .validation import correlations, figure3_cosines, write_correlations

__all__ = ["LAMBDA", "Candidate", "Covariance", "MatchTrainConfig", "Matcher", "MatcherConfig", "ScanMatcher",
           "TrainedMatcher", "attention", "context_vectors", "correlations", "count_tuples", "encode_captions",
           "encode_regions", "estimate_covariance", "figure3_cosines", "ledoit_wolf", "load_matcher",
           "make_candidate", "make_candidates", "mahalanobis", "pad_token_ids", "pair_scores", "projection_residual",
           "reo_from_context", "retrieval_recalls", "scene_tuples", "score_captions", "score_pairs", "shapes_regions",
           "train_matcher", "write_correlations", "write_retrieval"]
