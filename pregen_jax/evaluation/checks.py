"""What ``evaluate`` says about its inputs before the scores: a results file that covers only part
of REFS's images (COCOEvalCap scores that subset without a word), and captions that look like
captions of other images (``datasets.caption_fit``: the estimated share misplaced)."""
from __future__ import annotations

from ..captionfiles import ReferenceSet
from ..datasets.caption_fit import CaptionFit, caption_fits
from .inputs import ResultsFile


def caption_checks(refs: ReferenceSet, systems: list[ResultsFile], images: list) -> list[CaptionFit | None]:
    """Each results file's own-image check on the images scored, calibrated by the others where they
    can (None: too few images to say)."""
    references = [refs.captions[i] for i in images]
    return caption_fits(references, [[system.captions[i] for i in images] for system in systems])


def input_notes(refs: ReferenceSet, systems: list[ResultsFile], images: list, fits: list[CaptionFit | None]) -> list[str]:
    """One line per finding: the share of REFS's images scored (when not all), then each results
    file flagged by its check (``fits``, ``caption_checks``'s) as holding captions of other images."""
    notes = []
    if len(images) < len(refs.captions):
        notes.append(f"{systems[0].path}: covers {len(images):,} of the {len(refs.captions):,} images of {refs.path}: "
                     "scored on those only, as COCOEvalCap does (a score on part of the images is not the "
                     "whole set's)")
    for system, fit in zip(systems, fits):
        line = fit.warning(str(system.path)) if fit is not None else None
        if line is not None:
            notes.append(line)
    return notes


def empty_caption_notes(systems: list[ResultsFile]) -> list[str]:
    """One line per results file with empty captions (samples included): how many, the first image."""
    notes = []
    for system in systems:
        empty = [i for i in system.captions for caption in system.all_captions(i) if not caption.strip()]
        if empty:
            notes.append(f"{system.path}: {len(empty)} empty caption(s) (first: image {empty[0]!r}), scored as "
                         "the toolkits score them")
    return notes
