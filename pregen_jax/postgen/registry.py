"""The post-gen metrics pregen-jax knows: one registry of name -> factory(options).

A metric that cannot run on this machine (no Java, no CoreNLP jars, no GloVe package) is
reported with one line saying why, never replaced by a fake score. Register your own with
``register("MyMetric", factory)``: ``factory(options) -> PostgenMetric``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .base import PostgenMetric, PostgenOptions, file_hash  # noqa: F401  (file_hash: re-exported)
from .spice import jar_problem, java_problem  # noqa: F401  (java_problem: re-exported)


def _always(options: PostgenOptions) -> tuple[bool, str]:
    return True, "ok"


def _nothing(options: PostgenOptions) -> dict:
    return {}


@dataclasses.dataclass(frozen=True)
class MetricSpec:
    """A registered post-gen metric and the facts about it that its callers need.

    Attributes:
      factory: ``factory(options) -> PostgenMetric``.
      availability: ``availability(options) -> (ok, why)``; the built-in probes really run the
        toolkit (Java starts; SPICE scores one caption), once per process.
      depends_on: ``depends_on(options) -> dict`` of what besides the captions and the references
        changes its scores (tokenizer, stop words, vectors' version, jar hashes, backend): the
        cache key. The images, where ``needs_images``, are the caller's to add.
      needs_images: scores captions against the images too (REO): bind them first (``bind_images``).
      corpus_is_mean: the corpus score is the mean of the per-image scores (racing needs this).
      corpus_dependent: an image's score depends on the other images scored with it (CIDEr-D's
        document frequencies), so a block of images is scored on its own for the 2018 strata.
    """

    name: str
    factory: Callable[[PostgenOptions], PostgenMetric]
    availability: Callable[[PostgenOptions], tuple[bool, str]] = _always
    description: str = ""
    needs_images: bool = False
    depends_on: Callable[[PostgenOptions], dict] = _nothing
    corpus_is_mean: bool = True
    corpus_dependent: bool = False

    def cache_settings(self, options: PostgenOptions) -> dict:
        """What the cache key of this metric's scores holds besides captions, references and images."""
        from ..datasets import TOKENIZER_NAME
        return {"metric": self.name, "tokenizer": TOKENIZER_NAME, **self.depends_on(options)}


REGISTRY: dict[str, MetricSpec] = {}


def register(name: str, factory, availability=_always, description: str = "", overwrite: bool = False,
             needs_images: bool = False, depends_on=_nothing, corpus_is_mean: bool = True,
             corpus_dependent: bool = False) -> None:
    """Add a post-gen metric; ``factory(options)`` returns an object with ``compute_score(gts, res)``."""
    if name in REGISTRY and not overwrite:
        raise ValueError(f"a post-gen metric named {name!r} is already registered (pass overwrite=True)")
    REGISTRY[name] = MetricSpec(name, factory, availability, description, needs_images, depends_on,
                                corpus_is_mean, corpus_dependent)


def names() -> list[str]:
    """Every registered post-gen metric, in registration order (the column order of tables)."""
    return list(REGISTRY)


def check_names(requested, source: str = "post-gen metrics") -> None:
    unknown = [n for n in requested if n not in REGISTRY]
    if unknown:
        raise ValueError(f"{source}: unknown post-gen metric {unknown[0]!r}; choose from {', '.join(REGISTRY)}")


def availability(options: PostgenOptions = PostgenOptions(), requested=None) -> dict[str, tuple[bool, str]]:
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


def make_metrics(requested, options: PostgenOptions = PostgenOptions()) -> MetricSet:
    """Start the requested metrics; an unavailable one is recorded with its reason, not faked."""
    check_names(requested)
    metrics, unavailable = [], {}
    for name in requested:
        spec = REGISTRY[name]
        ok, why = spec.availability(options)
        if ok:
            metrics.append(spec.factory(options))
        else:
            unavailable[name] = why
    return MetricSet(metrics, unavailable)


# ------------------------------------------------------------------ the built-in metrics
# Factories import their toolkit when called, so that listing metrics stays cheap.


def _java(options: PostgenOptions) -> tuple[bool, str]:
    """METEOR: Java starts, and its jar opens."""
    problem = java_problem()
    if problem:
        return False, problem
    from .meteor import jar_path
    problem = jar_problem(jar_path())
    if problem:
        return False, problem
    from .jvm import java_description
    return True, f"java {java_description()}"


def _backend(options: PostgenOptions) -> dict:
    return {"backend": options.backend}


def _meteor(options):
    from .meteor import METEOR
    return METEOR()


def _meteor_depends(options):
    from .meteor import jar_path
    return {"jar": file_hash(str(jar_path()))}


def _cider(options):
    from .cider import CIDEr
    return CIDEr(options.backend)


def _bleu(n):
    def factory(options):
        from .bleu import BLEU
        return BLEU(n, options.backend)
    return factory


def _rouge(options):
    from .rouge import ROUGE_L
    return ROUGE_L(options.backend)


def _wmd(options):
    from .wmd import WMD, resolve_stopwords
    return WMD(resolve_stopwords(options)[0], options.backend)


def _wmd_availability(options):
    from .wmd import availability as wmd_availability
    return wmd_availability(options)


def _wmd_depends(options):
    from .wmd import depends_on
    return {**depends_on(options), **_backend(options)}


def _spice(options):
    from .spice import SPICE
    return SPICE(options.corenlp_dir or None)


def _spice_availability(options):
    from .spice import availability as spice_availability
    return spice_availability(options)


def _spice_depends(options):
    from .spice import depends_on
    return depends_on(options)


register("METEOR", _meteor, _java, "METEOR 1.5 (pycocoevalcap, Java; -l en -norm)", depends_on=_meteor_depends,
         corpus_is_mean=False)
register("CIDEr", _cider, description="CIDEr-D (pycocoevalcap's scale; document frequencies from the images scored)",
         depends_on=_backend, corpus_dependent=True)
register("SPICE", _spice, _spice_availability, "SPICE 1.0 (pycocoevalcap; needs Stanford CoreNLP 3.6.0 jars)",
         depends_on=_spice_depends)
register("WMD", _wmd, _wmd_availability,
         "exp(-Word Mover's Distance), gensim over GloVe 6B 50d; best reference per image, mean over images",
         depends_on=_wmd_depends)
for _n in (1, 2, 3, 4):
    register(f"Bleu_{_n}", _bleu(_n), description=f"BLEU-{_n} (pycocoevalcap's corpus BLEU from summed counts)",
             depends_on=_backend, corpus_is_mean=False)
register("ROUGE_L", _rouge, description="ROUGE-L F (pycocoevalcap)", depends_on=_backend)


def _reo(name):
    def factory(options):
        from .reo import REO
        return REO(name, options.reo_model)
    return factory


def _reo_availability(options):
    from .reo import availability as reo_availability
    return reo_availability(options)


def _reo_depends(options):
    from .reo import depends_on
    return depends_on(options)


for _name, _what in (("R", "relevance"), ("E", "extraness (higher: less extra content)"),
                     ("O", "omission (higher: less missing content)")):
    for _truth in ("image", "refs"):
        register(f"REO_{_name}_{_truth}", _reo(f"REO_{_name}_{_truth}"), _reo_availability,
                 f"REO {_what} against the {'image' if _truth == 'image' else 'references'} (needs a matching model)",
                 needs_images=True, depends_on=_reo_depends)
