"""Caption rewards on token ids, jit-able and on any device, for self-critical training (SCST):
``CiderD`` (``cider``) and ``Bleu`` (``bleu``), built once from the images' references
(``tables``: document frequencies and each image's reference n-grams, on the host), then called
on sampled ids (``grams``, ``ngrams``: exact two-word n-gram keys and their binary search).

The captioning trainer imports this package; it imports nothing of the package's above
``datasets`` (the evaluation scorers in ``postgen`` sit higher and are what tests compare with).
"""
from .bleu import Bleu
from .cider import CiderD
from .tables import DocumentFrequency, ReferenceTable

__all__ = ["Bleu", "CiderD", "DocumentFrequency", "ReferenceTable"]
