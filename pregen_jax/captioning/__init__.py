"""Caption generators, split as the flax examples are: ``models`` (the four RNN architectures and
their sizes, ``RnnConfig``), ``transformer`` (the transformer and its sizes, ``TransformerConfig``), ``registry`` (architectures by name), ``input_pipeline``
(padded, length-bucketed batches), ``decode`` (teacher forcing, greedy, beam search), ``scst``
(self-critical fine-tuning on the device rewards of ``pregen_jax.rewards``),
``train`` (training with checkpoints and resume, through ``training``), and ``evaluate`` (a model
on a whole split: reference probabilities and captions)."""
from . import registry, transformer  # noqa: F401  (transformer registers "transformer")
from .evaluate import generate_captions, perplexity, reference_probs
from .models import CELLS, FEATURE_STATS, Captioner, RnnConfig, with_feature_mean
from .registry import ARCHITECTURES, make_model, register_architecture
from .train import TrainConfig, TrainedModel, load_trained, train_captioner
from .transformer import TransformerCaptioner, TransformerConfig

BUILTIN_ARCHITECTURES = ARCHITECTURES.names()
"""The built-in architectures, the default of ``[models] architectures`` (which accepts any
registered later too: ``ARCHITECTURES`` is the registry)."""

__all__ = ["ARCHITECTURES", "BUILTIN_ARCHITECTURES", "CELLS", "FEATURE_STATS", "Captioner", "RnnConfig", "TrainConfig", "TrainedModel",
           "TransformerCaptioner", "TransformerConfig", "generate_captions", "load_trained", "make_model", "perplexity",
           "reference_probs", "register_architecture", "train_captioner", "with_feature_mean"]
