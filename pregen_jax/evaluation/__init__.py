"""Score COCO results files as ``COCOEvalCap`` does, faster, and compare systems with intervals and
paired tests: ``evaluate(references, captions, ...) -> DataFrame`` (``score_files`` for the per-image
scores and settings too). The library of ``pregen-search evaluate``."""
from ..captionfiles import read_references
from .inputs import read_results
from .runner import COCO_METRICS, Evaluation, evaluate, score_files
from .significance import Resampling, compare

__all__ = ["COCO_METRICS", "Evaluation", "Resampling", "compare", "evaluate", "read_references", "read_results",
           "score_files"]
