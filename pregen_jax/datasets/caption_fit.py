"""Do captions belong to the images they claim? One measure, one warning.

A file of captions of other images passes every format check (the ids, one caption each) and
scores near zero without a word: a one-a-line file off by a line, another dataset's captions, a
results file keyed by the wrong ids. Before any scoring, one measure compares the captions with
the references, image by image:

**own-image rank**: for each of up to ``SAMPLE`` images (drawn with a fixed seed), the caption is
compared with the references of its own image and of ``DECOYS`` other images of the sample; the
measure is the share of those decoys whose references the caption fits less well than its own
image's (ties count half), averaged over the images. A caption that describes its image fits its
own references better than most others' (real models: 0.83 and above, experiments/caption_check);
captions that belong to other images, or say the same of every image, score 0.5, chance.

Fit of a caption to an image: over the caption's distinct words, the number of the image's
references that hold the word, times the word's inverse document frequency over the sample's
images (``log(images / images whose references hold it)``), summed; so words every image's
references hold ("a", "the") count little, a shared rare word counts much, and a word all five
references hold counts more than one that a single reference holds (which keeps the measure
telling images apart when each image's references together hold most of a small vocabulary).
Words are lower-cased alphanumeric runs of the strings (or of the tokens joined by spaces),
whatever the caller's tokenizer was.

The measure is an effect size, not a significance test: its threshold ``MIN_OWN_IMAGE_RANK`` was
set so that real captions stay above it (no false alarm in 20 draws each of the 12 models of
Tanti et al. 2018 and of human captions of Flickr8k and of the shapes; target: at most 1%); what
it catches of a wrong file, and what it misses, is in experiments/caption_check/README.md. The
check cannot tell a shifted file from another dataset's captions or from a model that ignores its image (all score near
chance), and its warning says so. It reads only the sampled images (about 10,500 lookups):
0.18 s at 40,000 images on a loaded 2-core machine, whatever the number of images.
"""
from __future__ import annotations

import dataclasses
import math
import random
import re
from collections import Counter
from collections.abc import Sequence

SAMPLE = 500  # images compared (all of them when fewer)
DECOYS = 20  # other images each caption is compared with
SEED = 0
MIN_IMAGES = 20  # fewer: too few to say (at 10 images 2.1% of real models' draws fell below the threshold)
MIN_OWN_IMAGE_RANK = 0.7  # below: warn (experiments/caption_check: real captions >= 0.83, wrong files <= 0.55)
CHANCE = 0.5

Text = str | Sequence[str]  # a caption or a reference: a string, or its tokens
_WORD = re.compile(r"[^\W_]+")


@dataclasses.dataclass(frozen=True)
class CaptionFit:
    """The measure of one captions file (see the module docstring).

    own_image_rank: mean over the sampled images of the share of decoys whose references fit the
      caption less well than its own image's (0.5 chance, 1 every caption fits its own image best).
    images: images sampled; decoys: other images each was compared with.
    """

    own_image_rank: float
    images: int
    decoys: int

    @property
    def suspicious(self) -> bool:
        return self.own_image_rank < MIN_OWN_IMAGE_RANK

    def warning(self, source: str) -> str | None:
        """One line naming the measure, its value and what it suggests; None when it is in bounds."""
        if not self.suspicious:
            return None
        return (f"{source}: its captions fit their own images hardly better than other images (own-image rank "
                f"{self.own_image_rank:.2f}, flagged below {MIN_OWN_IMAGE_RANK:.2f}, chance {CHANCE:.2f}: the share of "
                f"{self.decoys} other images whose references a caption fits less well than its own image's, mean "
                f"over {self.images} images): a shifted or misordered file, captions of another dataset or of "
                "other images, or a model that ignores its image; "
                "this check cannot tell these apart")


def caption_fit(references: Sequence[Sequence[Text]], captions: Sequence[Text], *, sample: int = SAMPLE,
                decoys: int = DECOYS, seed: int = SEED, min_images: int = MIN_IMAGES) -> CaptionFit | None:
    """The own-image rank of ``captions[n]`` (image n's caption) against ``references[n][r]``
    (image n's references), on up to ``sample`` images drawn with ``seed``; None with fewer than
    ``min_images`` images (too few to say; at least 2)."""
    if len(references) != len(captions):
        raise ValueError(f"{len(captions)} captions for {len(references)} images")
    n = len(captions)
    if n < max(min_images, 2):
        return None
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(n), min(sample, n)))
    held = [Counter(word for ref in references[i] for word in set(_words(ref))) for i in chosen]  # word -> refs
    caption_words = [frozenset(_words(captions[i])) for i in chosen]
    weight = _idf(held)
    m, k = len(chosen), min(decoys, len(chosen) - 1)
    ranks = []
    for a in range(m):
        others = rng.sample(range(m - 1), k)  # positions among the other images: skip a itself
        own = _fit(caption_words[a], held[a], weight)
        fits = [_fit(caption_words[a], held[b + (b >= a)], weight) for b in others]
        ranks.append((sum(f < own for f in fits) + 0.5 * sum(f == own for f in fits)) / k)
    return CaptionFit(sum(ranks) / m, m, k)


def _words(text: Text) -> list[str]:
    return _WORD.findall((text if isinstance(text, str) else " ".join(text)).lower())


def _idf(held: list[Counter]) -> dict[str, float]:
    """word -> log(images / images whose references hold it), over the sampled images."""
    images = Counter(word for words in held for word in words)
    return {word: math.log(len(held) / count) for word, count in images.items()}


def _fit(caption: frozenset, held: Counter, weight: dict[str, float]) -> float:
    """Sum over the caption's words of (references of the image holding it) x its weight (a word
    no sampled reference holds is held by none, so it never counts)."""
    return sum(weight[word] * held[word] for word in caption if word in held)


def warn_if_misfit(references: Sequence[Sequence[Text]], captions: Sequence[Text], source: str) -> CaptionFit | None:
    """``caption_fit``, with a ``UserWarning`` when the measure is out of bounds (``source`` names the file)."""
    import warnings
    fit = caption_fit(references, captions)
    line = fit.warning(source) if fit is not None else None
    if line is not None:
        warnings.warn(line, stacklevel=2)
    return fit
