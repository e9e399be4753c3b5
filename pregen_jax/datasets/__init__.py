"""Caption datasets: the built-in shapes dataset, Karpathy JSON, Flickr8k files, image features."""
from .corpus import TOKENIZER, TOKENIZER_NAME, CaptionDataset, CaptionSplit, tokenize
from .features import read_features
from .readers import read_flickr8k, read_karpathy_json
from .shapes import ShapesConfig, load_shapes
from .vocab import EDGE, UNK, Vocabulary

__all__ = ["EDGE", "TOKENIZER", "TOKENIZER_NAME", "UNK", "CaptionDataset", "CaptionSplit", "ShapesConfig", "Vocabulary",
           "load_shapes", "read_features", "read_flickr8k", "read_karpathy_json", "tokenize"]
