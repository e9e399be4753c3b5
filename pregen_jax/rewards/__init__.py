"""Caption rewards on token ids, jit-able and on any device, for self-critical training (SCST):
``CiderD`` (``cider``) and ``Bleu`` (``bleu``), built once from the images' references
(``tables``: document frequencies and each image's reference n-grams, on the host; or
self-critical.pytorch's cached ``*-idxs.p``, ``pickled``), then called on sampled ids (``grams``,
``ngrams``: exact two-word n-gram keys and their binary search; ``reward``: how rows are read and
which ids are refused) from numpy, torch or JAX (``interop``); ``SelfCritical`` (``critic``) turns
them into self-critical advantages over a greedy or a mean-of-the-others baseline.

The captioning trainer imports this package; it imports nothing of the package's above
``datasets`` (the evaluation scorers in ``postgen`` sit higher and are what tests compare with).
"""
from .bleu import Bleu
from .cider import CiderD
from .critic import SelfCritical
from .tables import DocumentFrequency, ReferenceTable

__all__ = ["Bleu", "CiderD", "DocumentFrequency", "ReferenceTable", "SelfCritical"]
