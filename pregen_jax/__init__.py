"""pregen-jax: pre-gen metrics for caption generators, predicting post-gen quality without generating."""
from .types import RefProbs

__version__ = "0.1.0"
__all__ = ["RefProbs", "__version__"]
