"""Do captions belong to the images they claim? One measure, the share misplaced it implies, one warning.

A file of captions of other images passes every format check (the ids, one caption each) and
scores low without a word: a one-a-line file off by a line, another dataset's captions, a results
file keyed by the wrong ids, or part of a file moved to other images. Before any scoring, every
caption is compared with the references of its own image and of **every other image** (up to
``CAP`` images, drawn with a fixed seed where there are more; the fits: ``datasets.caption_ranks``):

**bottom-half share** ``s``: the share of images whose caption fits its own image's references
less well than it fits half of the other images' (its own image's mid-rank among the n - 1 others
below 1/2; exactly 1/2, all ties, counts half). A caption on the right image rarely is (Flickr8k's
human captions: 0.003-0.011; the 12 Flickr8k models of Tanti et al. 2018: 0.074-0.091); a caption
moved to a random image is, half the time (its own image is then one more decoy), so a file with a
share ``f`` of its captions misplaced has ``s = (1 - f) q0 + f / 2`` and

    f = (s - q0) / (CHANCE - q0)

estimates it (assuming the captions moved to random images). ``q0``, the share with nothing
misplaced, depends on the model (a model's wrong captions look like captions of other images), so
it is read from the data at hand when the check runs (``datasets.caption_null``): from the other
files checked on the same images in the same run (**peers**), or else from the dataset's own
references, one held out per image as a correctly placed caption, reduced to their commonest words
until as generic as the file's captions (**references**: wide for a model's captions, whose share
the references cannot say closely). Genericity (``RankProfile.genericity``) is how much the
captions fit the same images whatever image they sit on; moving captions among the file's images
does not change it. The file is flagged when ``s`` exceeds ``flag_threshold(n, q0, tau)``, the
share a rightly placed file of n images exceeds with probability ``FALSE_ALARM`` (1%); where that
threshold is 0.5 or above even a wholly misplaced file would pass: the captions are too generic to
check (never flagged, no misplaced share). The output names the calibration. experiments/caption_check
measures false alarms, abstentions and what it catches, per file, with each calibration.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import random
from collections.abc import Sequence
from statistics import NormalDist

import numpy as np

from .caption_null import MIN_PEERS, CaptionNull, ReferenceNull, beyond_peers, peer_calibration, peers_cover
from .caption_ranks import CHANCE, RankProfile, Text, rank_profile, share_of

CAP = 2000  # images checked (a seeded sample where more): see the module docstring
SEED = 0
MIN_IMAGES = 20  # fewer: too few to say
FALSE_ALARM = 0.01  # the threshold's one-sided level for a rightly placed file
LEVEL = 0.95  # the misplaced share's interval


def flag_threshold(images: int, q0: float, tau: float) -> float:
    """The bottom-half share above which a file of ``images`` images is flagged: the least ``k / images``
    that a rightly placed file exceeds with probability at most ``FALSE_ALARM``, its count of
    bottom-half images binomial given its ``q0``, and ``q0`` normal (``q0``, ``tau``) (21
    Gauss-Hermite nodes; exact where a normal approximation is not: small files' shares are skewed)."""
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
      its 95% interval (clipped to [0, 1]); None where the check cannot judge (``blind``).
    distinct: distinct captions among the checked images.
    genericity: how much the captions fit the same images whatever image they sit on (``RankProfile``).
    calibration: the null it was judged by (``datasets.caption_null``): its q0 is ``null_share``.
    """

    bottom_half: float
    own_image_rank: float
    images: int
    threshold: float
    misplaced: float | None
    misplaced_low: float | None
    misplaced_high: float | None
    distinct: int
    genericity: float
    calibration: CaptionNull

    @property
    def null_share(self) -> float:
        """The bottom-half share expected with nothing misplaced (the calibration's q0)."""
        return self.calibration.q0

    @property
    def suspicious(self) -> bool:
        """Flagged as holding captions of other images (never where ``blind``: the check cannot tell)."""
        return self.bottom_half > self.threshold and not self.blind

    @property
    def blind(self) -> bool:
        """Too generic to check: even a wholly misplaced file (share 0.5) would not be flagged."""
        return self.threshold >= CHANCE

    def summary(self) -> dict:
        """What settings.json records of the check, flagged or not (no misplaced share where blind)."""
        interval = None if self.blind else [round(self.misplaced_low, 4), round(self.misplaced_high, 4)]
        return {"misplaced_share": None if self.blind else round(self.misplaced, 4), "misplaced_share_95": interval,
                "bottom_half_share": round(self.bottom_half, 4), "flagged_above": round(self.threshold, 4),
                "flagged": self.suspicious, "images_checked": self.images,
                "own_image_rank": round(self.own_image_rank, 4), "distinct_captions": self.distinct,
                "genericity": round(self.genericity, 4), "null_share": round(self.null_share, 4),
                "null_spread": round(self.calibration.tau, 4), "calibration": self.calibration.kind,
                "calibrated_on": self.calibration.basis, "too_generic_to_check": self.blind}

    def warning(self, source: str) -> str | None:
        """One line naming the estimate, the measure, its bound, its calibration and what it suggests,
        or saying that the captions are too generic to check; None when in bounds."""
        by = f"calibrated by {self.calibration.kind}: {self.calibration.basis}"
        if self.blind:
            return (f"{source}: the own-image check cannot see captions moved to other images in it: a wholly "
                    f"misplaced file (bottom-half share {CHANCE:.2f}) would pass (expected with nothing moved: "
                    f"{self.null_share:.2f}, spread {self.calibration.tau:.2f}; {by}; genericity {self.genericity:.2f}, "
                    f"{self.distinct} distinct captions of {self.images})")
        if not self.suspicious:
            return None
        return (f"{source}: about {self.misplaced:.0%} [{self.misplaced_low:.0%}, {self.misplaced_high:.0%}] of its "
                f"captions look like captions of other images (bottom-half share {self.bottom_half:.3f}, flagged above "
                f"{self.threshold:.3f}: the share of {self.images} images whose caption fits half of the other images' "
                f"references better than its own; expected with nothing moved {self.null_share:.3f} ({by}), a wholly "
                f"misplaced file {CHANCE:.2f}; {self.distinct} distinct captions): "
                "a shifted or misordered file, captions of another dataset or of other images, a share of them moved, "
                "or a model whose captions fit other images better than its own; this check cannot tell these apart")


def caption_fits(references: Sequence[Sequence[Text]], files: Sequence[Sequence[Text]], *, cap: int = CAP,
                 seed: int = SEED, min_images: int = MIN_IMAGES) -> list[CaptionFit | None]:
    """The check of each file of ``files`` (``files[f][n]``: image n's caption) against
    ``references[n][r]`` (image n's references), on every image up to ``cap`` (a sample drawn with
    ``seed`` beyond), each file calibrated by the others where they can (``caption_null``); None
    for every file with fewer than ``min_images`` images (too few to say; at least 2)."""
    for captions in files:
        if len(references) != len(captions):
            raise ValueError(f"{len(captions)} captions for {len(references)} images")
    n = len(references)
    if n < max(min_images, 2):
        return [None] * len(files)
    chosen = sorted(random.Random(seed).sample(range(n), cap)) if n > cap else range(n)
    refs = [references[i] for i in chosen]
    checked = [[captions[i] for i in chosen] for captions in files]
    profiles = [rank_profile(refs, captions) for captions in checked]
    null = ReferenceNull(refs, seed, min_images)
    return [judged_file(captions, profile, [p for k, p in enumerate(profiles) if k != f], null)
            for f, (captions, profile) in enumerate(zip(checked, profiles))]


def judged_file(captions: Sequence[Text], profile: RankProfile, peers: Sequence[RankProfile],
                null: ReferenceNull) -> CaptionFit:
    """One checked file's ``CaptionFit`` (``profile``: its ``rank_profile``): calibrated by ``peers``,
    the other files' profiles on the same images, where there are ``MIN_PEERS`` (a file more generic
    than they cover, ``peers_cover``: the larger of their q0 and the references' at its genericity),
    else by ``null``, the references of those images."""
    if len(peers) < MIN_PEERS:
        calibration = null.calibration(null.genericity_of(captions, profile))
    else:
        calibration = peer_calibration([share_of(peer.ranks) for peer in peers])
        if not peers_cover(profile.genericity, [peer.genericity for peer in peers]):
            calibration = beyond_peers(calibration, null.calibration(null.genericity_of(captions, profile)))
    distinct = len({(c if isinstance(c, str) else " ".join(c)).strip().lower() for c in captions})
    return judged(profile.ranks, distinct, profile.genericity, calibration)


def caption_fit(references: Sequence[Sequence[Text]], captions: Sequence[Text], *, cap: int = CAP, seed: int = SEED,
                min_images: int = MIN_IMAGES) -> CaptionFit | None:
    """``caption_fits`` of one file alone (calibrated by the references)."""
    return caption_fits(references, [captions], cap=cap, seed=seed, min_images=min_images)[0]


def judged(ranks: np.ndarray, distinct: int, genericity: float, calibration: CaptionNull) -> CaptionFit:
    """The ``CaptionFit`` of f64[n] mid-ranks of each caption's own image among the n - 1 others
    (``distinct``: distinct captions among them; ``genericity``: ``RankProfile.genericity``), by ``calibration``."""
    n = len(ranks)
    share, q0, tau = share_of(ranks), calibration.q0, calibration.tau
    threshold = flag_threshold(n, q0, tau)
    if threshold >= CHANCE:  # too generic to tell: any share is as likely with nothing moved as with all
        return CaptionFit(share, float(ranks.mean()), n, threshold, None, None, None, distinct, genericity, calibration)
    spread = math.sqrt(share * (1 - share) / n + tau ** 2)  # the file's binomial spread and the null's
    z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
    scale = max(CHANCE - q0, 0.01)  # the share's rise per unit misplaced
    estimate, low, high = ((share + sign * z * spread - q0) / scale for sign in (0, -1, 1))
    return CaptionFit(share, float(ranks.mean()), n, threshold, *(min(1.0, max(0.0, v)) for v in (estimate, low, high)),
                      distinct, genericity, calibration)


def warn_if_misfit(references: Sequence[Sequence[Text]], files: Sequence[Sequence[Text]],
                   sources: Sequence[str]) -> list[CaptionFit | None]:
    """``caption_fits``, with a ``UserWarning`` for each file flagged or too generic to check
    (``sources[f]`` names file f)."""
    import warnings
    fits = caption_fits(references, files)
    for fit, source in zip(fits, sources):
        line = fit.warning(source) if fit is not None else None
        if line is not None:
            warnings.warn(line, stacklevel=2)
    return fits
