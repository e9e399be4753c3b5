"""The tier space of pre-gen metrics and the vectorized sweep over it.

A pre-gen metric is one choice per tier: filter (tier 1), caption score (tier 2), image
aggregator (tier 3), dataset aggregator (tier 4). Each choice is a registered pure function
(see ``_registry`` for the signatures); a ``Space`` is a tuple of them per tier; ``sweep``
evaluates every metric of a space on every stratum in one compiled computation.

Extending the space from user code::

    import jax.numpy as jnp
    from pregen_jax import tiers

    @tiers.register_filter("top2prefix")
    def top2prefix(probs, ranks, mask):
        '''The longest prefix whose true tokens all rank in the model's top 2.'''
        return mask & (jnp.cumsum(mask & (ranks >= 2), axis=-1) == 0)

    space = tiers.DEFAULT_SPACE.extend(filters=["top2prefix"])
    scores = tiers.sweep(ref_probs, strata, space)   # f[S, len(space)]

Strata are a bool[S, I] mask or ``Partitions`` (segment ids per partition); ``sweep`` finds
a mask's partitions (the spec's 15 strata are 5) and reduces each partition's segments, each
image once per partition. ``sweep_models`` sweeps many models in one computation, sharded
over the local devices.
"""
from . import _builtins  # noqa: F401  (registers the spec's functions)
from ._check import check, registered
from ._models import sweep_models
from ._parts import Parts
from ._registry import (
                        JOIN,
                        REGISTRIES,
                        TIER_NAMES,
                        TierFn,
                        describe,
                        get,
                        load_module_file,
                        register,
                        register_aggregator,
                        register_caption_score,
                        register_filter,
)
from ._segments import Partitions, plan_segments
from ._space import COMPAT_2018, DEFAULT_SPACE, FILTER0_SEMANTICS, Space, parse_metric_name
from ._sweep import check_strata, compiled_segment_sweep, compiled_sweep, sweep, sweep_arrays, sweep_segment_arrays

__all__ = [
    "COMPAT_2018", "DEFAULT_SPACE", "FILTER0_SEMANTICS", "JOIN", "REGISTRIES", "TIER_NAMES", "Partitions", "Parts", "Space", "TierFn",
    "check", "check_strata", "compiled_segment_sweep", "compiled_sweep", "describe", "get", "load_module_file", "parse_metric_name",
    "plan_segments", "register", "register_aggregator", "register_caption_score", "register_filter", "registered",
    "sweep", "sweep_arrays", "sweep_models", "sweep_segment_arrays",
]
