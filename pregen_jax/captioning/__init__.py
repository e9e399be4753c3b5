"""Caption generators, split as the flax examples are: ``models`` (the Flax modules),
``input_pipeline`` (padded, length-bucketed batches), ``decode`` (teacher forcing, greedy,
beam search), ``train`` (training with checkpoints and resume), ``checkpoints``, and
``evaluate`` (a model on a whole split: reference probabilities and captions)."""
from .evaluate import generate_captions, perplexity, reference_probs
from .models import ARCHITECTURES, CELLS, FEATURE_STATS, Captioner, CaptionerConfig, with_feature_mean
from .train import TrainConfig, TrainedModel, load_trained, train_captioner

__all__ = ["ARCHITECTURES", "CELLS", "FEATURE_STATS", "Captioner", "CaptionerConfig", "TrainConfig", "TrainedModel",
           "generate_captions", "load_trained", "perplexity", "reference_probs", "train_captioner",
           "with_feature_mean"]
