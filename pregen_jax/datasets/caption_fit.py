"""Does a captions file fit the images it claims to caption? Two cheap measures, each a warning.

A file of captions of another dataset passes every format check (the ids, one caption each) and
scores near zero without a word; so does a one-a-line file whose lines are off by one (a header
line, a lost line). Before any scoring, two measures compare the captions with the split's
references:

- vocabulary overlap: the share of the captions' words (tokens, counted with repeats) that occur
  anywhere in the references. A model trained on this data writes mostly such words (the quick
  demo's ten models: 100%); below ``MIN_VOCABULARY_SHARE`` the captions likely describe other
  images.
- own-image overlap: per image, the share of the caption's distinct words found in its own
  image's references, each word weighted by its inverse document frequency over the images
  (so that words every image's references hold, "a", "the", count little). The same share
  with the captions moved ``SHIFTS`` lines up or down is compared, image by image; when a shift
  fits clearly better than the order given (paired differences, ``MIN_SHIFT_Z`` standard errors
  above zero), the lines are likely off by that many. (A file in an unrelated order cannot be
  told from captions that ignore their image, which many weak models write: it is not flagged.)
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

MIN_VOCABULARY_SHARE = 0.5
SHIFTS = (-3, -2, -1, 1, 2, 3)
MIN_SHIFT_Z = 4.0
MIN_IMAGES = 20  # fewer: the shift comparison says too little to warn on


@dataclasses.dataclass(frozen=True)
class CaptionFit:
    """The measures of one captions file (see the module docstring).

    vocabulary_share: share of the captions' tokens in the references' vocabulary.
    own_overlap: mean weighted share of a caption's words in its own image's references.
    best_shift: the shift that fits clearly better than the order given (0: none), with its
      mean overlap ``shifted_overlap``.
    """

    vocabulary_share: float
    own_overlap: float
    best_shift: int = 0
    shifted_overlap: float = 0.0

    def warnings(self, source: str) -> list[str]:
        """One line per measure out of bounds, naming the measure and its value."""
        found = []
        if self.vocabulary_share < MIN_VOCABULARY_SHARE:
            found.append(f"{source}: only {100 * self.vocabulary_share:.0f}% of the captions' words occur in the "
                         f"references' vocabulary (share of caption words in the references' vocabulary; a model "
                         f"of this data writes most of its words from it): captions of other images or another "
                         f"dataset?")
        if self.best_shift:
            lines = f"{abs(self.best_shift)} line{'s' if abs(self.best_shift) > 1 else ''}"
            found.append(f"{source}: its captions fit the references of the images {lines} "
                         f"{'further on' if self.best_shift > 0 else 'earlier'} better than their own (own-image word "
                         f"overlap {100 * self.own_overlap:.0f}%, shifted {self.best_shift:+d}: "
                         f"{100 * self.shifted_overlap:.0f}%): the captions look ordered for other images (a one-a-line "
                         "file off by a line? key it by image_id)")
        return found


def caption_fit(captions: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> CaptionFit:
    """The measures of ``captions[n]`` (tokens of image n's caption) against ``references[n][r]``
    (tokens of image n's references)."""
    vocabulary = {word for refs in references for ref in refs for word in ref}
    tokens = [word for caption in captions for word in caption]
    share = sum(word in vocabulary for word in tokens) / max(len(tokens), 1)
    ref_words = [{word for ref in refs for word in ref} for refs in references]
    n = len(captions)
    frequency: dict[str, int] = {}
    for words in ref_words:
        for word in words:
            frequency[word] = frequency.get(word, 0) + 1
    weight = {word: math.log(n / count) for word, count in frequency.items()}
    own = _overlaps(captions, ref_words, weight, 0)
    best, best_z = 0, MIN_SHIFT_Z
    if n >= MIN_IMAGES:
        for shift in SHIFTS:
            z = _paired_z(_overlaps(captions, ref_words, weight, shift), own)
            if z > best_z:
                best, best_z = shift, z
    shifted = _mean(_overlaps(captions, ref_words, weight, best)) if best else 0.0
    return CaptionFit(share, _mean(own), best, shifted)


def _overlaps(captions, ref_words: list[set[str]], weight: dict[str, float], shift: int) -> list[float]:
    """Per image n: the weighted share of caption n's distinct words in the references of image n + shift
    (wrapping around; a word no reference holds weighs as a word of one image)."""
    n, rare = len(captions), math.log(max(len(captions), 1))
    out = []
    for i, caption in enumerate(captions):
        words = set(caption)
        total = sum(weight.get(word, rare) for word in words)
        found = sum(weight.get(word, rare) for word in words & ref_words[(i + shift) % n])
        out.append(found / total if total > 0 else 0.0)
    return out


def _mean(values: list[float]) -> float:
    return sum(values) / max(len(values), 1)


def _paired_z(a: list[float], b: list[float]) -> float:
    """mean(a - b) over its standard error (0 when the differences do not vary)."""
    d = [x - y for x, y in zip(a, b)]
    if len(d) < 2:
        return 0.0
    mean = _mean(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
    return mean / (sd / math.sqrt(len(d))) if sd > 0 else (math.inf if mean > 0 else 0.0)


def warn_if_misfit(captions: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]],
                   source: str) -> CaptionFit:
    """``caption_fit``, with a ``UserWarning`` per measure out of bounds (``source`` names the file)."""
    import warnings
    fit = caption_fit(captions, references)
    for line in fit.warnings(source):
        warnings.warn(line, stacklevel=2)
    return fit
