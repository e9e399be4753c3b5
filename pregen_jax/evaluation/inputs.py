"""The files ``evaluate`` reads, through ``captionfiles`` (the reader every command shares):
references (a COCO annotation file, a Karpathy-split JSON, or the JSONL ``export-references``
writes) and captions (a COCO results file, JSONL, TSV or one caption a line), each checked in full
before any scoring.

Which images, in which order, as coco-caption's example runs ``COCOEvalCap``
(``params['image_id'] = cocoRes.getImgIds()``): the images of the first results file, in the
order REFS lists its images.
"""
from __future__ import annotations

import dataclasses

from ..captionfiles import ReferenceSet, read_caption_file


@dataclasses.dataclass(frozen=True)
class ResultsFile:
    """One captions file: image id (REFS's key) -> its caption, in file order."""

    path: str
    captions: dict


def read_results(path, references: ReferenceSet) -> ResultsFile:
    """A captions file in any form, each image in REFS, once (a subset of REFS's images is allowed:
    COCOEvalCap scores the images of the results)."""
    return ResultsFile(str(path), read_caption_file(path, references))


def scored_images(references: ReferenceSet, systems: list[ResultsFile]) -> list:
    """The images scored, in REFS's order; every system must cover the same ones."""
    first = systems[0]
    for other in systems[1:]:
        missing = [i for i in first.captions if i not in other.captions]
        extra = [i for i in other.captions if i not in first.captions]
        if missing or extra:
            which = (f"lacks image {missing[0]!r}" if missing else f"has image {extra[0]!r} that {first.path} lacks")
            raise ValueError(f"{other.path}: covers other images than {first.path} ({which}; "
                             f"{len(missing)} missing, {len(extra)} extra): systems are compared on the same images")
    return [i for i in references.captions if i in first.captions]
