"""The null of the own-image check (``datasets.caption_fit``), from the data at hand: the bottom-half
share that a file of these images would show with nothing misplaced (``q0``), and how unsure that
is (``tau``, a standard deviation beside the file's own binomial spread). Computed when the check
runs; no constant fitted on any dataset.

**peers**: the other files checked on the same images in the same run (``evaluate``'s results
files, ``select``'s and ``predict``'s captions files), when there are at least ``MIN_PEERS`` of them:
``q0`` the median of their shares, ``tau`` their spread (1.4826 times the median absolute
deviation). Most files of a run are rightly placed; one that sits above the others by more than
they differ among themselves is flagged. The others' shares move with the images drawn, so the
file and its null share the images' difficulty.

A file more generic than they cover is judged by the larger of their median and the references'
``q0`` below at its genericity, with the peers' spread ("peers and references").

**references**: otherwise, the dataset's own references. Each image's references but one are its
references; the one held out (image i's reference ``i mod R_i``) is a caption placed on its own
image, a correctly placed caption of this dataset. Reduced to its ``j`` commonest words (by how
many of the images' references hold them; ``LEVELS``) it becomes more generic, so the held-out
references at each level give the share of correctly placed captions as generic as that level's.
``q0`` is that curve read at the file's genericity ``g`` (linear between levels, flat beyond).
``tau`` is half the curve's rise from the unreduced references' genericity ``g0`` to as far again
beyond the file's, ``2 g - g0`` (the file sits ``g - g0`` from what the references show, so its
reading is as unsure as that either way: where the curve bends up, as Flickr8k's does from its
references' genericity to its models', that is wider than the distance down to ``g0``), with the curve's binomial error (at least that of a share of 3 in the
m images read, the 95% bound of a share seen as 0). A model's captions are more generic than its
dataset's references, and genericity says how generic captions are, not how often they are wrong
(where-image2's models sit at 0.074-0.091 where the curve reads 0.06-0.15), so this calibration is
wide for a model: it catches a shifted file or captions of other images, not a tenth of a model's
captions moved (that would need the null within about 0.008 of the model's share at 1,000 images).
experiments/caption_check: on 200 random 500-image subsets of Flickr8k (no constant fitted on it; this
spread rule was chosen among four on the first 20 subsets, and the other 180 gave 0 false alarms), at most 1 false alarm in 200 and 7% too generic to check for any of where-image2's 12
models alone, none of either for Flickr8k's human captions.
Read on at most ``NULL_IMAGES`` images (a seeded sample beyond; the file's genericity is then read on
the same images); images with one reference are left out of it. With fewer than ``MIN_IMAGES``
images to read, there is no calibration ("none": too generic to check, never flagged).
"""
from __future__ import annotations

import dataclasses
import math
import random
from collections import Counter
from collections.abc import Sequence

import numpy as np

from .caption_ranks import CHANCE, RankProfile, Text, _words, rank_profile, share_of

MIN_PEERS = 4  # other files on the same images needed for a median and a spread
NULL_IMAGES = 500  # images the references calibration reads (a seeded sample where more)
LEVELS = (None, 6, 4, 3, 2, 1)  # words kept of each held-out reference, in turn (None: all of them)
_MAD = 1.4826  # a median absolute deviation to a normal's standard deviation


@dataclasses.dataclass(frozen=True)
class CaptionNull:
    """What a file is judged by. kind: "peers", "references" or "none"; q0: the bottom-half share
    expected with nothing misplaced; tau: its uncertainty (a standard deviation); basis: what it was
    read from, in words."""

    kind: str
    q0: float
    tau: float
    basis: str


def peer_calibration(shares: Sequence[float]) -> CaptionNull:
    """From f64[p] other files' bottom-half shares on the same images: their median and spread."""
    values = np.asarray(shares, np.float64)
    q0 = float(np.median(values))
    tau = _MAD * float(np.median(np.abs(values - q0)))
    return CaptionNull("peers", q0, tau, f"the median of {len(values)} other files' shares on these images")


def peers_cover(genericity: float, peer_genericities: Sequence[float]) -> bool:
    """Whether at least ``MIN_PEERS`` others (f64[p] genericities) can judge a file this generic: at
    most their largest genericity plus their spread (a first-epoch snapshot among finals cannot be)."""
    values = np.asarray(peer_genericities, np.float64)
    if len(values) < MIN_PEERS:
        return False
    return genericity <= values.max() + _MAD * float(np.median(np.abs(values - np.median(values))))


def beyond_peers(peers: CaptionNull, references: CaptionNull) -> CaptionNull:
    """A file more generic than its peers cover: the larger q0 of the two, the peers' spread (their
    median is no null for captions this generic, the references' reduced captions are the nearer one)."""
    if references.kind == "none" or references.q0 <= peers.q0:
        return peers
    return CaptionNull("peers and references", references.q0, peers.tau, f"{peers.basis}, raised to {references.basis}")


class ReferenceNull:
    """The references calibration of one set of images (the module docstring), each level's
    (genericity, share) computed when a file first needs it and kept for the next file."""

    def __init__(self, references: Sequence[Sequence[Text]], seed: int, min_images: int):
        usable = [i for i, refs in enumerate(references) if len(refs) >= 2]
        if len(usable) > NULL_IMAGES:
            usable = sorted(random.Random(seed).sample(usable, NULL_IMAGES))
        self.images = usable                                              # i64[m] of the checked images
        self.whole = len(usable) == len(references)
        self.references = [references[i] for i in usable]
        self.min_images = min_images
        held = [k % len(refs) for k, refs in enumerate(self.references)]  # each image's reference held out
        self._held = [self.references[k][h] for k, h in enumerate(held)]
        self._others = [refs[:h] + refs[h + 1:] for refs, h in zip(self.references, held)]
        self._levels: dict[int | None, tuple[float, float]] = {}
        self._order: dict[str, tuple[int, str]] | None = None

    def genericity_of(self, captions: Sequence[Text], profile: RankProfile) -> float:
        """A file's genericity on the calibration's images (``profile``: its own, on all checked images)."""
        if self.whole:
            return profile.genericity
        return rank_profile(self.references, [captions[i] for i in self.images]).genericity

    def calibration(self, genericity: float) -> CaptionNull:
        """The references calibration of a file this generic (on the calibration's images)."""
        if len(self.images) < max(self.min_images, 2):
            return CaptionNull("none", CHANCE, 0.0, f"{len(self.images)} images with two references or more and "
                               f"fewer than {MIN_PEERS} other files: nothing to calibrate on")
        points = [self._level(LEVELS[0])]
        as_far_again = 2 * genericity - points[0][0]  # the file's reading reflected about it (module docstring)
        for level in LEVELS[1:]:  # the levels, from all words to one, until one is at least that generic
            if points[-1][0] >= as_far_again:
                break
            points.append(self._level(level))
        return curve_null(points, genericity, len(self.images))

    def _level(self, level: int | None) -> tuple[float, float]:
        if level not in self._levels:
            captions = self._held if level is None else [self._reduced(text, level) for text in self._held]
            profile = rank_profile(self._others, captions)
            self._levels[level] = (profile.genericity, share_of(profile.ranks))
        return self._levels[level]

    def _reduced(self, text: Text, words: int) -> str:
        """The ``words`` commonest distinct words of ``text`` (most images' references first; ties by the word)."""
        if self._order is None:
            held = Counter(w for refs in self.references for w in {w for ref in refs for w in _words(ref)})
            self._order = {w: (-count, w) for w, count in held.items()}
        return " ".join(sorted(set(_words(text)), key=self._order.__getitem__)[:words])


def curve_null(points: Sequence[tuple[float, float]], genericity: float, images: int) -> CaptionNull:
    """The references calibration of a file this generic from the held-out references' levels,
    ``points[j] = (genericity, share)`` from all words (j = 0) on: ``q0`` the curve at the file's
    genericity (linear between levels, flat beyond), ``tau`` half the curve's rise from the
    unreduced references' genericity ``g0`` to as far again beyond the file's (``2 g - g0``), with the
    curve's binomial error (at least that of a share of 3 in the ``images`` read)."""
    generic = np.maximum.accumulate([g for g, _ in points])
    share = [s for _, s in points]
    q0 = float(np.interp(genericity, generic, share))
    rise = float(np.interp(2 * genericity - generic[0], generic, share)) - share[0]
    floor = max(q0, 3 / images)  # a share of 0 in m images is no certainty: 3 / m, its 95% bound
    spread = math.hypot(abs(rise) / 2, math.sqrt(floor * (1 - floor) / images))
    return CaptionNull("references", q0, spread, f"{images} images' held-out references (share {share[0]:.3f}, "
                       f"genericity {generic[0]:.2f}), reduced to their commonest words as generic as this file")
