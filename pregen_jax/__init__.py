"""pregen-jax: pre-gen metrics for caption generators, predicting post-gen quality without generating.

Where things are: ``refprobs`` (RefProbs, the pre-gen input), ``tiers`` (the tier registry,
the 504-metric space and the sweep), ``strata``, ``ranking``, ``postgen`` (real post-gen
toolkits), ``captioning`` (Flax caption generators: models, input pipeline, decode, train),
``training`` (the shared fit loop and checkpoints), ``reo``, ``datasets``, ``pipeline`` (the
search's stages, cache and report), ``meta``, ``cli``; layered as pyproject.toml declares.
Submodules load on first use, so that ``pregen-search --help`` starts at once.
"""
import importlib

__version__ = "0.2.0"
__all__ = ["RefProbs", "__version__"]


def __getattr__(name):
    if name == "RefProbs":
        from .refprobs import RefProbs
        return RefProbs
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as err:
        if err.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
