"""The fits behind the own-image check (``datasets.caption_fit``): every caption's fit to every
image's references, and each caption's own image's mid-rank among the others.

Fit of a caption to an image: over the caption's distinct words, the number of the image's
references that hold the word, times the word's inverse document frequency over the checked
images (``log(images / images whose references hold it)``), summed. Words are lower-cased
alphanumeric runs of the strings (or of the tokens joined by spaces), whatever the caller's
tokenizer was. All fits are one product, captions x words by words x images (``fit_blocks``), ``_BLOCK``
captions at a time (dense f64[block, n]).
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Sequence

import numpy as np

CHANCE = 0.5  # the bottom-half share of a wholly misplaced file
_BLOCK = 512  # images per dense block of fits
_DENSE_SHARE = 0.01  # a word in this share of the captions times share of the images: in the dense product
_GRID = 1 << 20  # the weights' grid (see own_image_ranks)

Text = str | Sequence[str]  # a caption or a reference: a string, or its tokens
_WORD = re.compile(r"[^\W_]+")
_SEPARATOR = "\x00"  # not a word character: never inside a word
_TOKEN = re.compile(r"[^\W_]+|\x00")


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
        top halves (0.31-0.34 for where-image2's Flickr8k models, 0.26-0.28 for Flickr8k's human
        captions; see ``caption_null``)."""
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
