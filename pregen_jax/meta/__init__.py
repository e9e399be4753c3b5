"""Meta-evaluation of the post-gen metrics: MUTT unit tests (corrupted sentences) and Kendall
correlation with the Flickr8k human judgments."""
from .common import requested_metrics, score_candidates
from .judgments import (
                        CROWDFLOWER,
                        EXPERT,
                        JudgedPairs,
                        Judgment,
                        crowdflower_pairs,
                        expert_pairs,
                        kendall,
                        read_captions,
                        read_crowdflower,
                        read_expert,
                        read_flickr8k_judgments,
)
from .judgments_report import JudgmentsRun, run_judgments
from .mutt import KINDS, MuttSet, parse_ks, passes, read_mutt, read_mutt_set, score_mutt
from .mutt_report import MuttRun, run_mutt

__all__ = ["CROWDFLOWER", "EXPERT", "JudgedPairs", "Judgment", "crowdflower_pairs", "expert_pairs", "kendall",
           "JudgmentsRun", "MuttRun", "read_captions", "read_crowdflower", "read_expert", "read_flickr8k_judgments",
           "run_judgments",
           "KINDS", "MuttSet", "requested_metrics", "parse_ks", "passes", "read_mutt", "read_mutt_set", "run_mutt",
           "score_candidates", "score_mutt"]
