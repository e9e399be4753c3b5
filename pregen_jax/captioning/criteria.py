"""What picks the best checkpoint during training: validation perplexity or a pre-gen metric.

At the end of every epoch training reads the validation split once, teacher-forced
(``evaluate.reference_probs``), and computes from it the per-token perplexity and any named
pre-gen metrics (``tiers.sweep`` with the whole split as one stratum). A ``Criterion`` is one
of those numbers with its direction: perplexity falls as quality rises, a pre-gen metric's
direction follows from its tiers where that is unambiguous and must be given otherwise.

Pre-gen metric names use ``tiers.DEFAULT_SPACE`` semantics (``filter0`` keeps the positions
whose true token is the model's top choice, as the paper's text says).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Literal

import numpy as np

from .. import tiers
from ..refprobs import RefProbs

PERPLEXITY = "perplexity"
Direction = Literal["auto", "higher", "lower"]

# Tier-3/4 aggregators that never decrease when one of their inputs increases: through them a
# caption score's direction carries over to the metric.
MONOTONE_AGGREGATORS = frozenset({"sum", "mean", "median", "geomean", "max", "min", tiers.JOIN})
# (caption score, filter) -> does the metric rise with quality? Only the unambiguous cases:
# the likelihood of whole references, and how many positions the model gets right (or wrong).
# prob/pplx of filtered positions are not listed: more kept positions can lower a product of
# probabilities, so their direction is an empirical question (say it with ``direction``).
_RISES_WITH_QUALITY = {("prob", "none"): True, ("pplx", "none"): False,
                       **{(score, f): True for score in ("count", "normcount") for f in ("filter0", "prefix0")},
                       **{(score, "miss0"): False for score in ("count", "normcount")}}
# Kept-position counts with nothing filtered depend on the reference lengths only.
_MODEL_FREE = {("count", "none"), ("normcount", "none")}


def parse_metric(name: str, what: str = "metric") -> tuple[str, str, str, str]:
    """(tier 4, tier 3, tier 2, tier 1) names of a pre-gen metric; one-line ValueError otherwise."""
    parts = tiers.parse_metric_name(name) if isinstance(name, str) else None
    if parts is None:
        raise ValueError(f"{what} {name!r} is neither {PERPLEXITY!r} nor a pre-gen metric name "
                         "(tier4_tier3_tier2_tier1 of registered tier functions, e.g. mean_max_normcount_prefix0)")
    return parts


def inferred_direction(name: str) -> bool | None:
    """True when ``name`` rises with quality, False when it falls, None when its tiers do not say."""
    if name == PERPLEXITY:
        return False
    tier4, tier3, score, filter_ = parse_metric(name)
    if tier4 not in MONOTONE_AGGREGATORS or tier3 not in MONOTONE_AGGREGATORS:
        return None
    return _RISES_WITH_QUALITY.get((score, filter_))


def is_model_free(name: str) -> bool:
    """Whether the metric is the same for every model (a function of the references alone)."""
    return name != PERPLEXITY and tuple(parse_metric(name)[2:]) in _MODEL_FREE


@dataclasses.dataclass(frozen=True)
class Criterion:
    """A selection criterion: ``name`` (``"perplexity"`` or a pre-gen metric) and its direction."""

    name: str
    higher_is_better: bool

    @classmethod
    def make(cls, name: str, direction: Direction = "auto") -> Criterion:
        """Validate ``name`` and settle its direction; one-line ValueError for what cannot be used."""
        if name != PERPLEXITY:
            parse_metric(name, "select_by")
            if is_model_free(name):
                raise ValueError(f"select_by {name!r} depends on the reference lengths only, not on the model: "
                                 "it cannot tell checkpoints apart")
        inferred = inferred_direction(name)
        if direction == "auto":
            if inferred is None:
                raise ValueError(f"select_by {name!r}: its direction does not follow from its tiers; "
                                 "set direction = \"higher\" or \"lower\" (which values mean a better model)")
            return cls(name, inferred)
        if name == PERPLEXITY and direction == "higher":
            raise ValueError("select_by 'perplexity' with direction 'higher': perplexity falls as quality rises")
        return cls(name, direction == "higher")

    @property
    def sign(self) -> float:
        """+1 or -1: values times the sign rise with quality."""
        return 1.0 if self.higher_is_better else -1.0

    @property
    def worst(self) -> float:
        """A value every finite value improves on."""
        return -math.inf if self.higher_is_better else math.inf

    def improves(self, value: float, best: float) -> bool:
        """Whether ``value`` is strictly better than ``best`` (NaN never is)."""
        if math.isnan(value):
            return False
        return value > best if self.higher_is_better else value < best

    def best_index(self, values) -> int:
        """Index of the best of ``values: f[N]`` (the first one on ties; NaN never best)."""
        signed = np.asarray(values, np.float64) * self.sign
        return int(np.argmax(np.where(np.isnan(signed), -np.inf, signed)))


def metric_space(names) -> tuple[tiers.Space, list[int]]:
    """The smallest tier space holding every metric in ``names``, and their columns in it.

    A space is a product of tier choices, so a few named metrics need only the product of
    their distinct tier functions (at most len(names) ** 4 columns, usually far fewer).
    """
    parts = [parse_metric(name, "monitor") for name in names]
    per_tier = [list(dict.fromkeys(p[k] for p in parts)) for k in range(4)]  # tier 4, 3, 2, 1
    space = tiers.Space.from_names(filters=per_tier[3], caption_scores=per_tier[2],
                                   image_aggregators=per_tier[1], dataset_aggregators=per_tier[0])
    column = {name: c for c, name in enumerate(space.names)}
    return space, [column[name] for name in names]


def pregen_values(ref_probs: RefProbs, names) -> dict[str, float]:
    """Each named pre-gen metric on the whole split (one stratum of every image)."""
    names = list(dict.fromkeys(names))
    if not names:
        return {}
    space, columns = metric_space(names)
    row = tiers.sweep(ref_probs, None, space)[0]
    return {name: float(row[c]) for name, c in zip(names, columns)}


@dataclasses.dataclass(frozen=True)
class Validation:
    """One epoch's validation: perplexity, the named pre-gen metrics, and what they cost.

    ``seconds``: wall time of the whole evaluation (the teacher-forced pass included);
    ``pregen_seconds``: of that, the time spent in the sweep.
    """

    perplexity: float
    pregen: dict[str, float]
    seconds: float
    pregen_seconds: float = 0.0

    def value(self, name: str) -> float:
        return self.perplexity if name == PERPLEXITY else self.pregen[name]


def validation_from_ref_probs(ref_probs: RefProbs, names, started: float) -> Validation:
    """Perplexity and the named pre-gen metrics from one teacher-forced pass begun at ``started``
    (a ``time.perf_counter()`` reading)."""
    from .evaluate import perplexity
    sweep_start = time.perf_counter()
    values = pregen_values(ref_probs, names)
    done = time.perf_counter()
    return Validation(perplexity(ref_probs), values, done - started, done - sweep_start)
