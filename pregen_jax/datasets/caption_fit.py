"""Does a captions file fit the images it claims to caption? Two cheap measures, each a warning.

A file of captions of another dataset passes every format check (the ids, one caption each) and
scores near zero without a word; so does a file in one-a-line order whose lines follow another
image order. Before any scoring, two measures compare the captions with the split's references:

- vocabulary overlap: the share of the captions' words (tokens, counted with repeats) that occur
  anywhere in the references. A model trained on this data writes mostly such words (the demo's
  models: over 95%); below ``MIN_VOCABULARY_SHARE`` the captions likely describe other images.
- own-image overlap: the mean share of each caption's distinct words found in its own image's
  references, against the same share with the references of other images (each caption paired
  with the references ``OFFSETS`` images further on). Captions in the right order share
  clearly more with their own image; when they share no more with it than with others
  (``MIN_OWN_RATIO``), they are likely ordered for other images.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

MIN_VOCABULARY_SHARE = 0.5
MIN_OWN_RATIO = 1.1
MIN_IMAGES = 20  # fewer: the own-image comparison says too little to warn on
OFFSETS = (1, 7, 31)


@dataclasses.dataclass(frozen=True)
class CaptionFit:
    """The two measures of one captions file (see the module docstring)."""

    vocabulary_share: float   # share of the captions' tokens in the references' vocabulary
    own_overlap: float        # mean share of a caption's words in its own image's references
    other_overlap: float      # the same with other images' references (mean over OFFSETS)

    def warnings(self, source: str) -> list[str]:
        """One line per measure out of bounds, naming the measure and its value."""
        found = []
        if self.vocabulary_share < MIN_VOCABULARY_SHARE:
            found.append(f"{source}: only {100 * self.vocabulary_share:.0f}% of the captions' words occur in the "
                         f"references' vocabulary (share of caption words in the references' vocabulary; a model "
                         f"of this data writes most of its words from it): captions of other images or another "
                         f"dataset?")
        if self.other_overlap > 0 and self.own_overlap < MIN_OWN_RATIO * self.other_overlap:
            found.append(f"{source}: each caption shares {100 * self.own_overlap:.0f}% of its words with its own "
                         f"image's references and {100 * self.other_overlap:.0f}% with other images' (own-image "
                         f"word overlap): the captions look ordered for other images (a one-a-line file in another "
                         f"order? key it by image_id)")
        return found


def caption_fit(captions: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]]) -> CaptionFit:
    """The measures of ``captions[n]`` (tokens of image n's caption) against ``references[n][r]``
    (tokens of image n's references); the own-image measure is NaN-free but only meaningful from
    ``MIN_IMAGES`` images on (below that, ``other_overlap`` is 0 and nothing is flagged)."""
    vocabulary = {word for refs in references for ref in refs for word in ref}
    tokens = [word for caption in captions for word in caption]
    share = sum(word in vocabulary for word in tokens) / max(len(tokens), 1)
    ref_words = [{word for ref in refs for word in ref} for refs in references]
    own = _overlap(captions, ref_words, 0)
    n = len(captions)
    other = (sum(_overlap(captions, ref_words, offset) for offset in OFFSETS) / len(OFFSETS)
             if n >= MIN_IMAGES else 0.0)
    return CaptionFit(share, own, other)


def _overlap(captions, ref_words: list[set[str]], offset: int) -> float:
    """Mean over images n of the share of caption n's distinct words in the references of image n + offset."""
    n = len(captions)
    shares = []
    for i, caption in enumerate(captions):
        words = set(caption)
        if words:
            shares.append(len(words & ref_words[(i + offset) % n]) / len(words))
    return sum(shares) / max(len(shares), 1)


def warn_if_misfit(captions: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]],
                   source: str) -> CaptionFit:
    """``caption_fit``, with a ``UserWarning`` per measure out of bounds (``source`` names the file)."""
    import warnings
    fit = caption_fit(captions, references)
    for line in fit.warnings(source):
        warnings.warn(line, stacklevel=2)
    return fit
