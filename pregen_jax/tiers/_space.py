"""A tier space: one tuple of tier functions per tier; its metrics are their product."""
from __future__ import annotations

import dataclasses
import itertools

from ._registry import JOIN, REGISTRIES, TIER_NAMES, TierFn, get

# The spec's canonical order within each tier.
DEFAULT_FILTERS = ("none", "filter0", "prefix0")
DEFAULT_CAPTION_SCORES = ("prob", "pplx", "count", "normcount")
DEFAULT_IMAGE_AGGREGATORS = ("sum", "mean", "median", "geomean", "max", "min", JOIN)
DEFAULT_DATASET_AGGREGATORS = ("sum", "mean", "median", "geomean", "max", "min")

# What ``filter0`` means in a space: its name is the 2018 study's, but the paper's text and the
# 2018 code (so the 2018 table, data.txt) meant opposite positions, so every output that names
# pre-gen metrics says which (the spec's "The 2018 reference table").
FILTER0_SEMANTICS = {
    "top-choice": "filter0 keeps the positions whose true token is the model's top choice (the 2018 paper's text; "
                  "this package's default)",
    "not-top-choice": "filter0 keeps the positions whose true token is NOT the model's top choice (the 2018 code, so "
                      "the 2018 table data.txt; this package's miss0, and a search's filter0 with [pregen] "
                      "compat_2018 = true)",
    "none": "no filter0 in the space",
    "other": "filter0 is a function of the user's",
}


def _as_tier_fns(tier: int, items) -> tuple[TierFn, ...]:
    fns = tuple(item if isinstance(item, TierFn) else get(tier, item) for item in items)
    for fn in fns:
        if fn.tier != tier:
            raise ValueError(f"{fn.name!r} is a tier-{fn.tier} function, not a tier-{tier} {TIER_NAMES[tier]}")
    names = [fn.name for fn in fns]
    clashes = sorted({n for n in names if names.count(n) > 1})
    if clashes:
        raise ValueError(f"tier {tier} ({TIER_NAMES[tier]}) lists these names more than once: {clashes}")
    if not fns:
        raise ValueError(f"tier {tier} ({TIER_NAMES[tier]}) needs at least one function")
    return fns


@dataclasses.dataclass(frozen=True)
class Space:
    """The pre-gen metrics made of every choice of one function per tier.

    Metric names are ``tier4_tier3_tier2_tier1``; ``names`` lists them in canonical order
    (tier 4 outermost, tier 1 innermost), the column order of ``sweep``'s output.
    Hashable, so that a compiled sweep is cached per space.
    """

    filters: tuple[TierFn, ...]
    caption_scores: tuple[TierFn, ...]
    image_aggregators: tuple[TierFn, ...]
    dataset_aggregators: tuple[TierFn, ...]

    @classmethod
    def from_names(cls, filters=DEFAULT_FILTERS, caption_scores=DEFAULT_CAPTION_SCORES,
                   image_aggregators=DEFAULT_IMAGE_AGGREGATORS,
                   dataset_aggregators=DEFAULT_DATASET_AGGREGATORS) -> Space:
        """Build a space from registered names (or ``TierFn`` objects) per tier."""
        return cls(_as_tier_fns(1, filters), _as_tier_fns(2, caption_scores),
                   _as_tier_fns(3, image_aggregators), _as_tier_fns(4, dataset_aggregators))

    def extend(self, filters=(), caption_scores=(), image_aggregators=(), dataset_aggregators=()) -> Space:
        """This space with more functions appended to some tiers (registered names or TierFns)."""
        return Space.from_names(self.filters + tuple(filters), self.caption_scores + tuple(caption_scores),
                                self.image_aggregators + tuple(image_aggregators),
                                self.dataset_aggregators + tuple(dataset_aggregators))

    @property
    def shape(self) -> tuple[int, int, int, int]:
        """(tier-4, tier-3, tier-2, tier-1) sizes, in canonical nesting order."""
        return (len(self.dataset_aggregators), len(self.image_aggregators),
                len(self.caption_scores), len(self.filters))

    @property
    def filter0(self) -> str:
        """Which positions the space's ``filter0`` keeps, a key of ``FILTER0_SEMANTICS``:
        ``top-choice`` (the paper's text, ``DEFAULT_SPACE``) or ``not-top-choice`` (the 2018 code,
        ``COMPAT_2018``); ``none`` without a ``filter0``."""
        found = [fn for fn in self.filters if fn.name == "filter0"]
        if not found:
            return "none"
        for semantics, name in (("top-choice", "filter0"), ("not-top-choice", "miss0")):
            if found[0].fn is get(1, name).fn:
                return semantics
        return "other"

    @property
    def names(self) -> list[str]:
        """Every metric name, canonical order."""
        return ["_".join(fn.name for fn in combo) for combo in itertools.product(
            self.dataset_aggregators, self.image_aggregators, self.caption_scores, self.filters)]

    def __len__(self) -> int:
        t4, t3, t2, t1 = self.shape
        return t4 * t3 * t2 * t1


DEFAULT_SPACE = Space.from_names()
"""The spec's 504 metrics with the paper's semantics (``filter0`` keeps top-choice positions)."""

COMPAT_2018 = Space.from_names(
    filters=("none", get(1, "miss0").renamed("filter0"), "prefix0"))
"""The same 504 names as the 2018 code computed them: its ``filter0`` kept the positions whose
true token was NOT the model's top choice."""


def parse_metric_name(name: str) -> tuple[str, str, str, str] | None:
    """Split ``tier4_tier3_tier2_tier1`` into registered names, or None if it is no metric.

    Registered names may contain underscores, so every split is tried against the registries.
    """
    parts = name.split("_")

    def split(start: int, tier: int):
        if tier == 0:
            return () if start == len(parts) else None
        names = set(REGISTRIES[tier]) | ({"filter0"} if tier == 1 else set())
        for end in range(start + 1, len(parts) + 1):
            head = "_".join(parts[start:end])
            if head in names:
                rest = split(end, tier - 1)
                if rest is not None:
                    return (head, *rest)
        return None

    return split(0, 4)
