"""Score COCO results files as ``COCOEvalCap`` does, faster, and compare systems with intervals and
paired tests: ``evaluate(references, captions, ...) -> Evaluation``, the command as a function (files or
captions in memory; ``str()`` of it is the command's table, ``.results`` its rows as objects,
``.table`` a DataFrame, ``.per_image`` the per-image scores). The library of ``pregen-search evaluate``.

Names load on first use (``inputs`` alone imports neither pandas nor the metrics)."""
import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what static readers (type checkers, the documentation site) see
    from ..captionfiles import read_references
    from .inputs import read_results
    from .results import Result
    from .runner import COCO_METRICS, Evaluation, evaluate, score_files
    from .significance import Resampling, compare

_WHERE = {"read_references": "..captionfiles", "read_results": ".inputs", "COCO_METRICS": ".runner",
          "Evaluation": ".runner", "Result": ".results", "evaluate": ".runner", "score_files": ".runner", "Resampling": ".significance",
          "compare": ".significance"}

__all__ = ["COCO_METRICS", "Evaluation", "Resampling", "Result", "compare", "evaluate", "read_references", "read_results",
           "score_files"]


def __getattr__(name):
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *__all__])
