"""Do captions belong to the images they claim? One measure, the share misplaced it implies, one warning.

A file of captions of other images passes every format check (the ids, one caption each) and
scores low without a word: a one-a-line file off by a line, another dataset's captions, a results
file keyed by the wrong ids, or part of a file moved to other images. Before any scoring, every
caption is compared with the references of its own image and of **every other image** (up to
``CAP`` images, drawn with a fixed seed where there are more):

**bottom-half share** ``s``: the share of images whose caption fits its own image's references
less well than it fits half of the other images' (its own image's mid-rank among the n - 1 others
below 1/2; exactly 1/2, all ties, counts half). A caption on the right image of a real model
rarely is (the 12 Flickr8k models of Tanti et al. 2018: ``Q0`` = 0.083 on average, 0.074-0.091;
human captions 0.010); a caption moved to a random image is, half the time (its own image is
then one more decoy), so a file with a share ``f`` of its captions misplaced has
``s = (1 - f) q0 + f / 2`` and

    f = (s - Q0) / (CHANCE - Q0)

estimates it (assuming the model is like those calibrated, ``q0 = Q0``, and the captions moved to
random images). The file is flagged when ``s`` exceeds ``flag_threshold(n)``, the share a file of n
images of a model like those exceeds with probability ``FALSE_ALARM`` (1%): the models' spread
(``TAU``) and the binomial spread of n images; 0.18 at 50 images, 0.107 at 1,000, 0.102 at 2,000. experiments/caption_check
measures false alarms (on real files of 20 to 1,000 images) and what it catches (a file shifted by
a line, 10% moved); how ``q0`` grows as models get weaker, and so when a weak model is flagged as
if misplaced, is there too. The warning names every explanation the check cannot tell apart.

Fit of a caption to an image: over the caption's distinct words, the number of the image's
references that hold the word, times the word's inverse document frequency over the checked
images (``log(images / images whose references hold it)``), summed. Words are lower-cased
alphanumeric runs of the strings (or of the tokens joined by spaces), whatever the caller's
tokenizer was. All fits are one product, captions x words (sparse)
by words x images (dense, ``_BLOCK`` images at a time).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import random
import re
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

CAP = 2000  # images checked (a seeded sample where more): see the module docstring
SEED = 0
MIN_IMAGES = 20  # fewer: too few to say
CHANCE = 0.5  # the share of a wholly misplaced file
Q0 = 0.083  # mean share of the 12 where-image2 models' own files (experiments/caption_check)
TAU = 0.005  # their spread (standard deviation across the 12 models)
FALSE_ALARM = 0.01  # the threshold's one-sided level for a file of a model like those
LEVEL = 0.95  # the misplaced share's interval
_BLOCK = 512  # images per dense block of fits
_GRID = 1 << 20  # the weights' grid (see own_image_ranks)

Text = str | Sequence[str]  # a caption or a reference: a string, or its tokens
_WORD = re.compile(r"[^\W_]+")
_SEPARATOR = "\x00"  # not a word character: never inside a word
_TOKEN = re.compile(r"[^\W_]+|\x00")


@functools.cache
def flag_threshold(images: int) -> float:
    """The bottom-half share above which a file of ``images`` images is flagged: the least ``k / images``
    that a file of a model like those calibrated exceeds with probability at most ``FALSE_ALARM``,
    its count of bottom-half images binomial given its ``q0``, and ``q0`` normal (``Q0``, ``TAU``)
    over models (21 Gauss-Hermite nodes). Exact where the normal approximation is not: at 50 images
    the shares are skewed right (normal: 0.175, 4.2% of 240 real subsets above; exact: 0.18)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(21)
    q = np.clip(Q0 + TAU * nodes, 1e-9, 1 - 1e-9)[:, None]                        # f64[21, 1]
    k = np.arange(images + 1)
    log_choose = _log_factorial(images) - _log_factorial(k) - _log_factorial(images - k)
    pmf = np.exp(log_choose + k * np.log(q) + (images - k) * np.log1p(-q))       # f64[21, images + 1]
    beyond = (weights / weights.sum()) @ (pmf[:, ::-1].cumsum(axis=1)[:, ::-1] - pmf)  # P(count > k)
    return float(np.nonzero(beyond <= FALSE_ALARM)[0][0]) / images


def _log_factorial(k) -> np.ndarray:
    return np.vectorize(math.lgamma)(np.asarray(k, np.float64) + 1)


@dataclasses.dataclass(frozen=True)
class CaptionFit:
    """The measure of one captions file (see the module docstring).

    bottom_half: the share of checked images whose caption ranks its own image's references in the
      bottom half of the other checked images' (ties half; 0.5 a wholly misplaced file).
    own_image_rank: mean over the checked images of the own image's mid-rank among the others (0.5 chance).
    images: images checked (every one up to ``CAP``); threshold: the flag's bound on ``bottom_half``.
    misplaced, misplaced_low, misplaced_high: the estimated share of captions on other images and
      its 95% interval (clipped to [0, 1]).
    distinct: distinct captions among the checked images (few: a model that says much the same of
      every image, which the share alone cannot tell from misplaced captions).
    """

    bottom_half: float
    own_image_rank: float
    images: int
    threshold: float
    misplaced: float
    misplaced_low: float
    misplaced_high: float
    distinct: int

    @property
    def suspicious(self) -> bool:
        return self.bottom_half > self.threshold

    def summary(self) -> dict:
        """What settings.json records of the check, flagged or not."""
        return {"misplaced_share": round(self.misplaced, 4),
                "misplaced_share_95": [round(self.misplaced_low, 4), round(self.misplaced_high, 4)],
                "bottom_half_share": round(self.bottom_half, 4), "flagged_above": round(self.threshold, 4),
                "flagged": self.suspicious, "images_checked": self.images,
                "own_image_rank": round(self.own_image_rank, 4), "distinct_captions": self.distinct}

    def warning(self, source: str) -> str | None:
        """One line naming the estimate, the measure, its bound and what it suggests; None when in bounds."""
        if not self.suspicious:
            return None
        return (f"{source}: about {self.misplaced:.0%} [{self.misplaced_low:.0%}, {self.misplaced_high:.0%}] of its "
                f"captions look like captions of other images (bottom-half share {self.bottom_half:.3f}, flagged above "
                f"{self.threshold:.3f}: the share of {self.images} images whose caption fits half of the other images' "
                f"references better than its own; real models' files about {Q0:.3f}, a wholly misplaced file "
                f"{CHANCE:.2f}; {self.distinct} distinct captions): a shifted or misordered file, captions of another dataset or of other images, a share "
                "of them moved, or a model that ignores its image or is much weaker than most; "
                "this check cannot tell these apart")


def caption_fit(references: Sequence[Sequence[Text]], captions: Sequence[Text], *, cap: int = CAP, seed: int = SEED,
                min_images: int = MIN_IMAGES) -> CaptionFit | None:
    """The check of ``captions[n]`` (image n's caption) against ``references[n][r]`` (image n's
    references), on every image up to ``cap`` (a sample drawn with ``seed`` beyond); None with fewer
    than ``min_images`` images (too few to say; at least 2)."""
    if len(references) != len(captions):
        raise ValueError(f"{len(captions)} captions for {len(references)} images")
    n = len(captions)
    if n < max(min_images, 2):
        return None
    chosen = sorted(random.Random(seed).sample(range(n), cap)) if n > cap else range(n)
    checked = [captions[i] for i in chosen]
    ranks = own_image_ranks([references[i] for i in chosen], checked)
    return judged(ranks, len({(c if isinstance(c, str) else " ".join(c)).strip().lower() for c in checked}))


def judged(ranks: np.ndarray, distinct: int) -> CaptionFit:
    """The ``CaptionFit`` of f64[n] mid-ranks of each caption's own image among the n - 1 others
    (``distinct``: distinct captions among them)."""
    n = len(ranks)
    share = float(np.mean(np.where(ranks < CHANCE, 1.0, np.where(ranks == CHANCE, 0.5, 0.0))))
    spread = math.sqrt(share * (1 - share) / n + TAU ** 2)  # the file's binomial spread and q0's across models
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    estimate = (share - Q0) / (CHANCE - Q0)
    low, high = ((share + sign * z * spread - Q0) / (CHANCE - Q0) for sign in (-1, 1))
    return CaptionFit(share, float(ranks.mean()), n, flag_threshold(n), *(min(1.0, max(0.0, v)) for v in (estimate, low, high)),
                      distinct)


def own_image_ranks(references: Sequence[Sequence[Text]], captions: Sequence[Text]) -> np.ndarray:
    """f64[n]: for each caption, its own image's mid-rank among the n - 1 other images by fit
    (``(#others fitting less + #others fitting as well / 2) / (n - 1)``)."""
    import scipy.sparse as sparse  # its C product: a numpy gather of the same was 2-3x slower (temporaries)
    n = len(captions)
    vocabulary: dict[str, int] = {}
    # every reference's words, each once per reference, then each image's words with the references holding them
    ref, word = _word_ids([text for refs in references for text in refs], vocabulary, add=True)
    image = np.repeat(np.arange(n), [len(refs) for refs in references])[ref]
    words = len(vocabulary)
    pair, held = np.unique(image * words + word, return_counts=True)            # sorted: image-major
    weight = _weights(np.bincount(pair % words, minlength=words), n)
    starts = np.searchsorted(pair // words, np.arange(n + 1))
    by_image = sparse.csr_matrix((held.astype(np.float64), pair % words, starts), shape=(n, words))
    row, column = _word_ids(captions, vocabulary, add=False)  # a word no reference holds never counts
    by_caption = sparse.csr_matrix((weight[column], column, np.searchsorted(row, np.arange(n + 1))), shape=(n, words))
    own = np.asarray(by_caption.multiply(by_image).sum(axis=1)).ravel()[:, None]  # f64[n, 1]
    above = np.zeros(n)  # sum over images of sign(fit - own): (#fitting better) - (#fitting less)
    for start in range(0, n, _BLOCK):  # images start.. : every caption's fit to each, f64[n, block]
        fits = by_caption @ by_image[start:start + _BLOCK].T.toarray()
        np.subtract(fits, own, out=fits)
        above += np.sign(fits, out=fits).sum(axis=1)
    # less + tied / 2 = (images - above) / 2 over all n images; the own image is one tie: minus 1/2
    return ((n - above) / 2 - 0.5) / (n - 1)


def _weights(images_holding: np.ndarray, images: int) -> np.ndarray:
    """f64[words]: ``log(images / images holding the word)`` on a grid of 2^-20, so that every fit is
    an exact sum whatever order its products are summed in (a caption's own fit and an equal
    decoy's tie exactly)."""
    return np.round(np.log(images / np.maximum(images_holding, 1)) * _GRID) / _GRID


def _words(text: Text) -> list[str]:
    return _WORD.findall((text if isinstance(text, str) else " ".join(text)).lower())


def _word_ids(texts: Sequence[Text], vocabulary: dict[str, int], add: bool) -> tuple[np.ndarray, np.ndarray]:
    """(i64[m] text, i64[m] word id), sorted by text then word: each distinct word of each text once,
    by ``vocabulary`` (new words added where ``add``, else left out). One regex pass over all the
    texts joined by a separator the words never hold, so no Python work per text but the join."""
    strings = [t if isinstance(t, str) else " ".join(t) for t in texts]
    joined = _SEPARATOR.join(strings).lower() + _SEPARATOR
    if joined.count(_SEPARATOR) != len(strings):  # a text holding the separator itself: a space instead
        joined = _SEPARATOR.join(t.replace(_SEPARATOR, " ") for t in strings).lower() + _SEPARATOR
    tokens = _TOKEN.findall(joined)
    if add:
        ids = [vocabulary.setdefault(w, len(vocabulary)) if w != _SEPARATOR else -1 for w in tokens]
    else:
        ids = [vocabulary.get(w, -2) if w != _SEPARATOR else -1 for w in tokens]
    ids = np.array(ids, np.int64)
    separator = ids == -1
    text = np.cumsum(separator) - separator  # each token's text: separators before it
    kept = ids >= 0
    keys = np.unique(text[kept] * max(1, len(vocabulary)) + ids[kept])
    return keys // max(1, len(vocabulary)), keys % max(1, len(vocabulary))


def warn_if_misfit(references: Sequence[Sequence[Text]], captions: Sequence[Text], source: str) -> CaptionFit | None:
    """``caption_fit``, with a ``UserWarning`` when the file is flagged (``source`` names the file)."""
    import warnings
    fit = caption_fit(references, captions)
    line = fit.warning(source) if fit is not None else None
    if line is not None:
        warnings.warn(line, stacklevel=2)
    return fit
