"""Former home of the per-model stages, now split by concept; these names stay importable here.

The stages themselves, in order, are ``flow``; the pre-gen space is ``space``; the post-gen
metrics of a search are ``postgen_metrics``; a model's caption quality is ``quality``.
"""
from .postgen_metrics import LazyMetrics, gts_res
from .quality import caption_quality
from .space import space_key, tier_space

__all__ = ["LazyMetrics", "caption_quality", "gts_res", "space_key", "tier_space"]
