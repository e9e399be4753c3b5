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

estimates it (assuming the captions moved to random images). ``q0``, the share with nothing
misplaced, depends on the model: captions that say much the same of every image fit their own
image no better than others (the first-epoch snapshots of a demo's GRUs: 0.40-0.48). So ``q0`` is
read off the file itself, from how **generic** its captions are (``RankProfile.genericity``: the
spread over images of the share of captions that fit each image better than most; moving
captions among the file's images does not change it): ``null_share`` maps it to ``q0`` and its
spread across models ``tau`` (``NULL_CURVE``: fitted on real files of three datasets,
where-image2's 12 Flickr8k models at 0.15-0.17 give ``Q0`` = 0.083). The file is flagged when
``s`` exceeds ``flag_threshold(n, q0, tau)``, the share a real file of n images this generic
exceeds with probability ``FALSE_ALARM`` (1%): 0.107 at 1,000 images for the where-image2
models, higher for more generic captions; captions so generic that even a wholly misplaced file
would pass (the threshold at 0.5 or above) are never flagged, and said to be beyond the check.
experiments/caption_check measures false alarms (real files of 20 to 1,000 images, each model
judged by a curve fitted without it) and what it catches (a file shifted by a line, 5% and 10%
moved, on strong and weak models). The warning names every explanation the check cannot tell apart.

Fit of a caption to an image: over the caption's distinct words, the number of the image's
references that hold the word, times the word's inverse document frequency over the checked
images (``log(images / images whose references hold it)``), summed. Words are lower-cased
alphanumeric runs of the strings (or of the tokens joined by spaces), whatever the caller's
tokenizer was. All fits are one product, captions x words by words x images (``fit_blocks``), ``_BLOCK``
captions at a time (dense f64[block, n]).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import random
import re
from collections.abc import Iterator, Sequence
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
_DENSE_SHARE = 0.01  # a word in this share of the captions times share of the images: in the dense product
_GRID = 1 << 20  # the weights' grid (see own_image_ranks)

Text = str | Sequence[str]  # a caption or a reference: a string, or its tokens
_WORD = re.compile(r"[^\W_]+")
_SEPARATOR = "\x00"  # not a word character: never inside a word
_TOKEN = re.compile(r"[^\W_]+|\x00")


# The bottom-half share of real files with nothing misplaced, by their captions' genericity
# (``RankProfile``): q0 and its spread across models tau at genericity 0.20, 0.22, ..., 1.00, linear
# between and flat beyond. Printed by experiments/caption_check/null_model.py from 63 real files of
# three datasets (where-image2's 12 Flickr8k models and its human captions, a demo's 30 models and
# snapshots and its human captions, a quick demo's): at each knot the model family there with the
# highest q0 + 2.33 tau (q0 an isotonic fit in genericity, tau its leave-one-out residuals nearby).
_NULL_Q0 = (0.0333, 0.0362, 0.0362, 0.0362, 0.0790, 0.0790, 0.0823, 0.0843, 0.0843, 0.0843, 0.0933, 0.0933, 0.0933,
            0.0933, 0.0933, 0.1030, 0.1030, 0.1030, 0.1030, 0.3089, 0.3650, 0.3703, 0.3756, 0.3809, 0.3809,
            0.3809, 0.3809, 0.3855, 0.4330, 0.4330, 0.4330, 0.4330, 0.4558, 0.4558, 0.4668, 0.4788, 0.4922,
            0.4922, 0.5029, 0.5094, 0.5094)
_NULL_TAU = (0.0183, 0.0183, 0.0183, 0.0175, 0.0051, 0.0055, 0.0056, 0.0056, 0.0286, 0.0286, 0.0357, 0.0357, 0.0181,
             0.0227, 0.0230, 0.0230, 0.0230, 0.0336, 0.1355, 0.1355, 0.1355, 0.2286, 0.1465, 0.0645,
             0.1758, 0.2586, 0.3415, 0.3415, 0.3415, 0.3415, 0.0650, 0.0650, 0.0183, 0.0510, 0.0570,
             0.0570, 0.0514, 0.0570, 0.0360, 0.0047, 0.3415)
NULL_CURVE = tuple((round(0.20 + 0.02 * k, 2), q, t) for k, (q, t) in enumerate(zip(_NULL_Q0, _NULL_TAU)))


def null_share(genericity: float) -> tuple[float, float]:
    """(q0, tau): the mean bottom-half share of files of real models whose captions are this generic
    (nothing misplaced), and its spread across models (``NULL_CURVE``)."""
    g, q, t = np.array(NULL_CURVE).T
    return float(np.interp(genericity, g, q)), float(np.interp(genericity, g, t))


def flag_threshold(images: int, q0: float = Q0, tau: float = TAU) -> float:
    """The bottom-half share above which a file of ``images`` images is flagged: the least ``k / images``
    that a file of a model like those calibrated exceeds with probability at most ``FALSE_ALARM``,
    its count of bottom-half images binomial given its ``q0``, and ``q0`` normal (``q0``, ``tau``)
    over models (21 Gauss-Hermite nodes). Exact where the normal approximation is not: at 50 images
    the shares are skewed right (normal: 0.175, 4.2% of 240 real subsets above; exact: 0.18)."""
    return _threshold(images, round(q0, 4), round(tau, 4))


@functools.cache
def _threshold(images: int, q0: float, tau: float) -> float:
    nodes, weights = np.polynomial.hermite_e.hermegauss(21)
    q = np.clip(q0 + tau * nodes, 1e-9, 1 - 1e-9)[:, None]                        # f64[21, 1]
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
    distinct: distinct captions among the checked images.
    genericity: how much the captions fit the same images whatever image they sit on (``RankProfile``;
      moving captions does not change it); null_share: the bottom-half share expected of real
      captions this generic with nothing misplaced (``null_share``), the estimate's and threshold's q0.
    """

    bottom_half: float
    own_image_rank: float
    images: int
    threshold: float
    misplaced: float
    misplaced_low: float
    misplaced_high: float
    distinct: int
    genericity: float
    null_share: float

    @property
    def suspicious(self) -> bool:
        """Flagged as holding captions of other images (never where ``blind``: the check cannot tell)."""
        return self.bottom_half > self.threshold and not self.blind

    @property
    def blind(self) -> bool:
        """Captions so generic that even a wholly misplaced file (share 0.5) would not be flagged."""
        return self.threshold >= CHANCE

    def summary(self) -> dict:
        """What settings.json records of the check, flagged or not."""
        return {"misplaced_share": round(self.misplaced, 4),
                "misplaced_share_95": [round(self.misplaced_low, 4), round(self.misplaced_high, 4)],
                "bottom_half_share": round(self.bottom_half, 4), "flagged_above": round(self.threshold, 4),
                "flagged": self.suspicious, "images_checked": self.images,
                "own_image_rank": round(self.own_image_rank, 4), "distinct_captions": self.distinct,
                "genericity": round(self.genericity, 4), "null_share": round(self.null_share, 4),
                "too_generic_to_check": self.blind}

    def warning(self, source: str) -> str | None:
        """One line naming the estimate, the measure, its bound and what it suggests, or saying that
        the captions are too generic to check; None when in bounds."""
        if self.blind:
            return (f"{source}: its captions fit much the same images whatever image they describe (genericity "
                    f"{self.genericity:.2f}, {self.distinct} distinct captions of {self.images}; a model that ignores its "
                    f"image or says much the same of every image): the own-image check cannot see captions moved to "
                    f"other images in it (real captions this generic: bottom-half share about {self.null_share:.2f}, "
                    f"a wholly misplaced file {CHANCE:.2f})")
        if not self.suspicious:
            return None
        return (f"{source}: about {self.misplaced:.0%} [{self.misplaced_low:.0%}, {self.misplaced_high:.0%}] of its "
                f"captions look like captions of other images (bottom-half share {self.bottom_half:.3f}, flagged above "
                f"{self.threshold:.3f}: the share of {self.images} images whose caption fits half of the other images' "
                f"references better than its own; real captions as generic as these (genericity {self.genericity:.2f}) "
                f"about {self.null_share:.3f}, a wholly misplaced file {CHANCE:.2f}; {self.distinct} distinct captions): "
                "a shifted or misordered file, captions of another dataset or of other images, a share of them moved, "
                "or a model whose captions fit other images better than its own; this check cannot tell these apart")


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
    profile = rank_profile([references[i] for i in chosen], checked)
    distinct = len({(c if isinstance(c, str) else " ".join(c)).strip().lower() for c in checked})
    return judged(profile.ranks, distinct, profile.genericity)


def judged(ranks: np.ndarray, distinct: int, genericity: float) -> CaptionFit:
    """The ``CaptionFit`` of f64[n] mid-ranks of each caption's own image among the n - 1 others
    (``distinct``: distinct captions among them; ``genericity``: ``RankProfile.genericity``)."""
    n = len(ranks)
    share = share_of(ranks)
    q0, tau = null_share(genericity)
    spread = math.sqrt(share * (1 - share) / n + tau ** 2)  # the file's binomial spread and q0's across models
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    scale = max(CHANCE - q0, 0.01)  # the share's rise per unit misplaced
    estimate = (share - q0) / scale
    low, high = ((share + sign * z * spread - q0) / scale for sign in (-1, 1))
    threshold = flag_threshold(n, q0, tau)
    if threshold >= CHANCE:  # too generic to tell: any share is as likely with nothing moved as with all
        low, high = 0.0, 1.0
    return CaptionFit(share, float(ranks.mean()), n, threshold, *(min(1.0, max(0.0, v)) for v in (estimate, low, high)),
                      distinct, genericity, q0)


def share_of(ranks: np.ndarray) -> float:
    """The bottom-half share of f64[n] own-image mid-ranks: below 1/2 counts 1, exactly 1/2 half."""
    return float(np.mean(np.where(ranks < CHANCE, 1.0, np.where(ranks == CHANCE, 0.5, 0.0))))


def own_image_ranks(references: Sequence[Sequence[Text]], captions: Sequence[Text]) -> np.ndarray:
    """f64[n]: for each caption, its own image's mid-rank among the n - 1 other images by fit
    (``(#others fitting less + #others fitting as well / 2) / (n - 1)``)."""
    return rank_profile(references, captions).ranks


@dataclasses.dataclass(frozen=True)
class RankProfile:
    """ranks: f64[n], each caption's own image's mid-rank among the n - 1 others (``own_image_ranks``).
    columns: f64[n], for each image, the share of all n captions that rank it in the top half of
      the images by fit (its mid-rank among the n - 1 others above 1/2; exactly 1/2 half: the own
      image's rule): which captions sit on which image does not change it, so moving captions among
      the file's images leaves it as it is (and a wholly misplaced file's share is 1 - its mean)."""

    ranks: np.ndarray
    columns: np.ndarray

    @property
    def genericity(self) -> float:
        """The standard deviation of ``columns`` over its largest for their mean, ``sqrt(m (1 - m))``:
        1 when every caption fits the same images (a model that says one thing of every image: each
        image is in every caption's top half or in none), 0 when every image is in as many captions'
        top halves (about 0.3 for where-image2's Flickr8k models, 0.2 for human captions; see
        ``null_share``)."""
        mean, spread = float(self.columns.mean()), float(self.columns.std())
        return spread / math.sqrt(mean * (1 - mean)) if 0 < mean < 1 and spread > 0 else 0.0


def fit_blocks(references: Sequence[Sequence[Text]], captions: Sequence[Text],
               block: int = _BLOCK) -> Iterator[tuple[int, np.ndarray]]:
    """(start, f64[rows, n]): the fits of captions ``start..start + rows`` to every image's
    references (the module docstring's fit), ``block`` captions at a time.

    The product of captions x words by words x images, in numpy alone (scipy.sparse's import took
    0.16 s of ``evaluate``'s 1.8 at 5,000 images; its product, factors included, took 0.13 s where
    this takes 0.10 at 2,000 images, 0.56 against 0.41 at 5,000): the words that
    many captions share with many images (``_DENSE_SHARE``) as one dense product, the others each
    added to the images that hold them (``np.bincount``). Every fit is an exact sum (``_weights``),
    so the order of the sums changes no bit."""
    n = len(captions)
    if n == 0:
        return
    vocabulary: dict[str, int] = {}
    # every reference's words, each once per reference, then each image's words with the references holding them
    ref, word = _word_ids([text for refs in references for text in refs], vocabulary, add=True)
    image = np.repeat(np.arange(n), [len(refs) for refs in references])[ref]
    words = max(1, len(vocabulary))
    pair, held = np.unique(image * words + word, return_counts=True)            # sorted: image-major
    weight = _weights(np.bincount(pair % words, minlength=words), n)
    by_word = np.argsort(pair % words, kind="stable")                           # the pairs word-major
    holder, count = pair[by_word] // words, held[by_word].astype(np.float64)   # per word: its images, its counts
    first = np.searchsorted(pair[by_word] % words, np.arange(words + 1))        # word w's pairs: first[w]..first[w + 1]
    holders = np.diff(first)
    row, column = _word_ids(captions, vocabulary, add=False)  # a word no reference holds never counts
    # dense: a word whose share of captions times share of images is large (adding it pair by pair would
    # touch about as many cells as the dense product, at ten times the cost a cell)
    dense = np.flatnonzero(np.bincount(column, minlength=words) * holders > _DENSE_SHARE * n * n)
    dense_rows = np.zeros((len(dense), n))                                     # f64[dense words, images]
    for k, w in enumerate(dense):
        dense_rows[k, holder[first[w]:first[w + 1]]] = count[first[w]:first[w + 1]]
    slot = np.full(words, -1)
    slot[dense] = np.arange(len(dense))
    starts = np.searchsorted(row, np.arange(n + 1))
    for start in range(0, n, block):
        end = min(n, start + block)
        at = slice(starts[start], starts[end])
        rows, cols, weights = row[at] - start, column[at], weight[column[at]]
        is_dense = slot[cols] >= 0
        caption_weights = np.zeros((end - start, len(dense)))
        caption_weights[rows[is_dense], slot[cols[is_dense]]] = weights[is_dense]
        fits = caption_weights @ dense_rows                                     # f64[rows, n]
        rows, cols, weights = rows[~is_dense], cols[~is_dense], weights[~is_dense]
        lengths = holders[cols]
        if lengths.sum():  # each (caption, word) pair over the images holding the word
            within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            entry = np.repeat(first[cols], lengths) + within
            fits += np.bincount(np.repeat(rows * n, lengths) + holder[entry],
                                weights=np.repeat(weights, lengths) * count[entry],
                                minlength=(end - start) * n).reshape(end - start, n)
        yield start, fits


def rank_profile(references: Sequence[Sequence[Text]], captions: Sequence[Text]) -> RankProfile:
    """The own-image ranks and the images' column shares (``RankProfile``) of one file, from the
    n x n fits of every caption to every image's references."""
    n = len(captions)
    ranks, columns = np.empty(n), np.zeros(n)
    for start, fits in fit_blocks(references, captions):  # captions start.. : each one's fit to every image
        rows = np.arange(start, start + len(fits))
        own = fits[np.arange(len(rows)), rows][:, None]                          # f64[block, 1]
        # each cell scored as the own image is: mid-rank among the row's others above 1/2 (#less + #tied / 2
        # > n / 2) counts 1, exactly 1/2 half; only cells equal to the lower median need their counts
        middle = np.partition(fits, (n - 1) // 2, axis=1)[:, [(n - 1) // 2]]      # f64[block, 1]
        at = (fits < middle).sum(axis=1) + (fits == middle).sum(axis=1) / 2       # the median value's #less + #tied / 2
        score = np.where(at > n / 2, 1.0, np.where(at == n / 2, 0.5, 0.0))[:, None]
        columns += (fits > middle).sum(axis=0) + ((fits == middle) * score).sum(axis=0)
        above = np.sign(np.subtract(fits, own, out=fits), out=fits).sum(axis=1)  # (#fitting better) - (#fitting less)
        # less + tied / 2 = (images - above) / 2 over all n images; the own image is one tie: minus 1/2
        ranks[rows] = ((n - above) / 2 - 0.5) / (n - 1)
    return RankProfile(ranks, columns / n)


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
