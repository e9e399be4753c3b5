"""The post-gen metrics pregen-jax knows: one registry of name -> metric class and its probes.

Each metric registers itself in the module that defines it (``register_metric`` at the end of
``bleu.py``, ``cider.py``, ...); its facts (how its corpus score is made, its range, whether it
needs Java or the images) are class attributes of the metric, declared once, and read from the
class here. A metric that cannot run on this machine (no Java, no CoreNLP jars, no GloVe package)
is reported with one line saying why, never replaced by a fake score. Register your own with
``register_metric("MyMetric", MyMetric)``: a ``PostgenMetric`` subclass (``MyMetric.from_options(name,
options)`` makes it).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from ..registry import Registry
from .base import PostgenMetric, PostgenOptions


def _always(options: PostgenOptions) -> tuple[bool, str]:
    return True, "ok"


def _nothing(options: PostgenOptions) -> dict:
    return {}


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """A registered post-gen metric: its class, and the probes its callers need.

    Attributes:
      metric_class: a ``PostgenMetric`` subclass; its facts (``corpus``, ``corpus_dependent``,
        ``score_range``, ``needs_java``, ``needs_images``, ``has_stats``, ``releases_gil``) are read from it.
      availability: ``availability(options) -> (ok, why)``; the built-in probes really run the
        toolkit (Java starts; SPICE scores one caption), once per process.
      depends_on: ``depends_on(options) -> dict`` of what besides the captions and the references
        changes its scores (tokenizer, stop words, vectors' version, jar hashes, backend): the
        cache key. The images, where ``needs_images``, are the caller's to add.
    """

    name: str
    metric_class: type[PostgenMetric]
    availability: Callable[[PostgenOptions], tuple[bool, str]] = _always
    description: str = ""
    depends_on: Callable[[PostgenOptions], dict] = _nothing

    def factory(self, options: PostgenOptions, apart: bool = False) -> PostgenMetric:
        """The metric, started with ``options`` (``apart``: in a process of its own where it can,
        ``PostgenMetric.apart``)."""
        if apart:
            return self.metric_class.apart(self.name, options)
        return self.metric_class.from_options(self.name, options)

    @property
    def corpus(self) -> str:
        return self.metric_class.corpus

    @property
    def corpus_is_mean(self) -> bool:
        """The corpus score is the mean of the per-image scores (racing needs this)."""
        return self.metric_class.corpus == "mean"

    @property
    def corpus_dependent(self) -> bool:
        return self.metric_class.corpus_dependent

    @property
    def needs_images(self) -> bool:
        return self.metric_class.needs_images

    @property
    def needs_java(self) -> bool:
        return self.metric_class.needs_java

    @property
    def has_stats(self) -> bool:
        return self.metric_class.has_stats

    @property
    def releases_gil(self) -> bool:
        return self.metric_class.releases_gil

    @property
    def score_range(self) -> tuple[float, float]:
        return self.metric_class.score_range

    def cache_settings(self, options: PostgenOptions) -> dict:
        """What the cache key of this metric's scores holds besides captions, references and images."""
        from ..datasets import TOKENIZER_NAME
        return {"metric": self.name, "tokenizer": TOKENIZER_NAME, **self.depends_on(options)}


REGISTRY: Registry[MetricSpec] = Registry("post-gen metric")


def register_metric(name: str, metric_class: type[PostgenMetric], availability=_always, description: str = "",
                    depends_on=_nothing, overwrite: bool = False) -> None:
    """Add a post-gen metric: ``metric_class.from_options(name, options)`` starts it."""
    if not (isinstance(metric_class, type) and issubclass(metric_class, PostgenMetric)):
        raise TypeError(f"post-gen metric {name!r}: {metric_class!r} is not a PostgenMetric subclass")
    _check_capability(name, metric_class)
    REGISTRY.add(name, MetricSpec(name, metric_class, availability, description, depends_on), overwrite=overwrite)


def _check_capability(name: str, metric_class: type[PostgenMetric]) -> None:
    """``TypeError`` where a class does not implement what its ``has_stats`` fact declares."""
    implements_stats = metric_class._checked_stats is not PostgenMetric._checked_stats
    if metric_class.has_stats and not implements_stats:
        raise TypeError(f"post-gen metric {name!r}: has_stats is True but {metric_class.__name__} implements no "
                        "_checked_stats (per-image statistics); implement it, or set has_stats = False and "
                        "implement compute_score")
    if not metric_class.has_stats and metric_class.compute_score is PostgenMetric.compute_score:
        raise TypeError(f"post-gen metric {name!r}: has_stats is False, so {metric_class.__name__} must implement "
                        "compute_score (the base one is made of per-image statistics)")


def metric_names() -> list[str]:
    """Every registered post-gen metric, in registration order (the column order of tables)."""
    return list(REGISTRY.names())


def check_metric_names(requested, source: str = "post-gen metrics") -> None:
    unknown = [n for n in requested if n not in REGISTRY]
    if unknown:
        raise ValueError(f"{source}: unknown post-gen metric {unknown[0]!r}; choose from {', '.join(REGISTRY)}")


def metric_availability(options: PostgenOptions = PostgenOptions(), requested=None) -> dict[str, tuple[bool, str]]:
    """Whether each metric can run on this machine, and why (not)."""
    return {name: spec.availability(options) for name, spec in REGISTRY.items()
            if requested is None or name in requested}


@dataclasses.dataclass
class MetricSet:
    """The metrics that could be started, and one line per metric that could not."""

    metrics: list[PostgenMetric]
    unavailable: dict[str, str]

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def close(self) -> None:
        for metric in self.metrics:
            metric.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def make_metrics(requested, options: PostgenOptions = PostgenOptions(), apart: bool = False) -> MetricSet:
    """Start the requested metrics (``apart``: each in a process of its own where it can,
    ``PostgenMetric.apart``); an unavailable one is recorded with its reason, not faked."""
    check_metric_names(requested)
    metrics, unavailable = [], {}
    for name in requested:
        spec = REGISTRY[name]
        ok, why = spec.availability(options)
        if ok:
            metrics.append(spec.factory(options, apart))
        else:
            unavailable[name] = why
    return MetricSet(metrics, unavailable)


def backend_setting(options: PostgenOptions) -> dict:
    """``depends_on`` of the metrics whose backend is an option (the same scores, kept apart all the same)."""
    return {"backend": "array" if options.backend == "native" else options.backend}  # the key from before the rename
