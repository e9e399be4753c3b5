"""Caption datasets: the built-in shapes dataset, Karpathy JSON, Flickr8k files, image features,
and the models' vocabularies (words, or BPE pieces: ``tokenizer``)."""
from .corpus import TOKENIZER, TOKENIZER_NAME, CaptionDataset, CaptionSplit, tokenize
from .features import read_features
from .readers import read_flickr8k, read_karpathy_json
from .shapes import ShapesConfig, load_shapes
from .vocab import EDGE, UNK, CaptionVocabulary, Vocabulary, load_vocabulary

__all__ = ["EDGE", "TOKENIZER", "TOKENIZER_NAME", "UNK", "CaptionDataset", "CaptionSplit", "CaptionVocabulary",
           "ShapesConfig", "Vocabulary", "load_shapes", "load_vocabulary", "read_features", "read_flickr8k",
           "read_karpathy_json", "tokenize"]
