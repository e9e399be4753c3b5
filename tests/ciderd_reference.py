"""The Python reward the device rewards are checked against: self-critical.pytorch's way of
scoring samples (``get_self_critical_reward``: each row of ids to a string with
``array_to_str``, then ``pyciderevalcap``'s CiderD with a cached document frequency), here run
on pycocoevalcap's own ``CiderScorer``, whose ``compute_cider`` is the same code as ciderD's
(CIDEr-D: clipping, sigma 6). ciderD's cached mode differs only in where the document frequency
and the idf numerator come from (a file of frequencies over distinct images and
log(its number of images)), so this subclass takes both as given instead of counting them
from the scored pairs. Shared by tests/test_rewards.py and benchmarks/bench_reward.py."""
from collections import defaultdict

import numpy as np
from pycocoevalcap.bleu.bleu_scorer import BleuScorer
from pycocoevalcap.cider.cider_scorer import CiderScorer


def array_to_str(row, end: int = 0) -> str:
    """The ids of one sampled row up to and including the first ``end`` id, space-separated."""
    out = []
    for token in row:
        out.append(str(int(token)))
        if token == end:
            break
    return " ".join(out)


def read_str(row, rule: str = "row", end: int = 0) -> str:
    """A row as the rewards' rule ``rule`` reads it: "row" is ``array_to_str``; "always" adds the end
    id where the row has none; "never" drops it."""
    words = array_to_str(row, end).split()
    has_end = bool(words) and words[-1] == str(end) and end in list(map(int, row))
    if rule == "never" and has_end:
        words = words[:-1]
    elif rule == "always" and not has_end:
        words.append(str(end))
    return " ".join(words)


def reference_str(ids, end: int = 0, count_end: bool = True) -> str:
    """A reference's ids, then the end id when counted (``prepro_ngrams``: tokens + ['<eos>'])."""
    return " ".join(map(str, [*ids, end] if count_end else ids))


def document_frequency(references: list[list[str]]) -> tuple[defaultdict, int]:
    """(df over distinct images, images) as ``prepro_ngrams`` caches them: pycocoevalcap's own
    ``compute_doc_freq`` over one entry per image."""
    scorer = CiderScorer()
    for refs in references:
        scorer.cook_append(None, refs)
    scorer.compute_doc_freq()
    return scorer.document_frequency, len(scorer.crefs)


class CachedCiderD(CiderScorer):
    """CIDEr-D with a cached document frequency (``df``) and idf numerator log(``images``)."""

    def __init__(self, df: dict, images: int):
        self._cached_ref_len = np.log(float(images))
        super().__init__()
        self.document_frequency = defaultdict(float, df)

    # compute_cider assigns log(number of scored pairs) here; the cached mode keeps log(images)
    ref_len = property(lambda self: self._cached_ref_len, lambda self, value: None)

    def compute_score(self, option=None, verbose=0):
        scores = np.array(self.compute_cider())
        return scores.mean(), scores

    def empty(self) -> "CachedCiderD":
        """A scorer with no pairs sharing this one's frequencies (ciderD's ``copy_empty``, once per step)."""
        new = object.__new__(CachedCiderD)
        new.__dict__.update(self.__dict__, crefs=[], ctest=[])
        return new


def cider_d(samples, image_index, references: list[list[str]], df: dict, images: int,
            end: int = 0, scorer: CachedCiderD | None = None) -> np.ndarray:
    """f64[B]: each sampled row's CIDEr-D against its image's reference strings, ids to strings
    included (``scorer``: one built before, whose frequencies are reused)."""
    scorer = (scorer or CachedCiderD(df, images)).empty()
    for row, image in zip(np.asarray(samples), np.asarray(image_index)):
        scorer += (array_to_str(row, end), references[image])
    return scorer.compute_score()[1]


def bleu(samples, image_index, references: list[list[str]], order: int = 4, end: int = 0) -> np.ndarray:
    """f64[B]: pycocoevalcap's per-sentence BLEU-``order`` ('closest' reference length) of each row."""
    scorer = BleuScorer(n=4)
    for row, image in zip(np.asarray(samples), np.asarray(image_index)):
        scorer += (array_to_str(row, end), references[image])
    return np.asarray(scorer.compute_score(option="closest")[1][order - 1])
