"""Flax caption generators (init, pre, par, merge) and the image encoder of the built-in dataset."""
from .captioner import ARCHITECTURES, CELLS, Captioner, CaptionerConfig
from .encoder import ImageEncoder

__all__ = ["ARCHITECTURES", "CELLS", "Captioner", "CaptionerConfig", "ImageEncoder"]
