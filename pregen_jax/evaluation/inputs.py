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
from collections.abc import Mapping
from pathlib import Path

from ..captionfiles import CaptionRows, ReferenceSet, match_samples, parse_captions, read_references
from ..captionfiles.references import check_image_id

IN_MEMORY = "in memory"  # how outputs name references and captions given as Python objects


@dataclasses.dataclass(frozen=True)
class ResultsFile:
    """One captions file: image id (REFS's key) -> its caption, in file order; ``keyed_by``: how its
    ids matched REFS's images (``keyed_by``'s words); ``samples``: image id -> its captions where the
    file gives several per image (the same number for each; ``captions`` then holds the first of
    each, which the misplaced-caption check reads), else None."""

    path: str
    captions: dict
    keyed_by: str = ""
    samples: dict | None = None

    @property
    def per_image(self) -> int:
        """Captions per image: 1, or the number of samples."""
        return 1 if self.samples is None else len(next(iter(self.samples.values())))

    def all_captions(self, image) -> list[str]:
        """The captions of ``image``: its one caption, or its samples."""
        return [self.captions[image]] if self.samples is None else self.samples[image]


def _results(path: str, samples: dict, keyed: str) -> ResultsFile:
    """A ``ResultsFile`` of image -> captions: one caption each is the plain file it always was."""
    captions = {image: found[0] for image, found in samples.items()}
    several = any(len(found) > 1 for found in samples.values())
    return ResultsFile(path, captions, keyed, samples if several else None)


def read_results(path, references: ReferenceSet) -> ResultsFile:
    """A captions file in any form, each image in REFS, once or with the same number of samples (a
    subset of REFS's images is allowed: COCOEvalCap scores the images of the results)."""
    found = parse_captions(path, samples=True)
    samples = match_samples(found, list(references.captions), references.source, references.aliases)
    return _results(str(path), samples, keyed_by(found, references))


def keyed_by(found: CaptionRows, references: ReferenceSet) -> str:
    """How the rows' image ids matched REFS's images: REFS's own key (``id``, ``cocoid``, ``filename``,
    ...), its alias (a Karpathy JSON's ``filename`` or ``imgid``), or the line order."""
    if found.form == "lines":
        return "line order (REFS's image order)"
    first = found.rows[0][1]
    if first not in references.captions and str(first) in references.aliases:
        return f"{references.alias_name} (matched to REFS's {references.key_name})"
    return references.key_name


def references_given(references, split: str = "test") -> ReferenceSet:
    """REFS from a file (``read_references``) or in memory: image id -> its reference strings (or one string)."""
    if not isinstance(references, Mapping):
        return read_references(references, split)
    source = f"references ({IN_MEMORY})"
    if not references:
        raise ValueError(f"{source}: no images")
    captions = {}
    for image_id, refs in references.items():
        check_image_id(source, f"image {image_id!r}", image_id)
        refs = [refs] if isinstance(refs, str) else list(refs)
        if not refs or not all(isinstance(r, str) for r in refs):
            raise ValueError(f"{source}: image {image_id!r}: expected a list of reference strings")
        captions[image_id] = refs
    return ReferenceSet(source, IN_MEMORY, captions)


def systems_given(captions) -> list:
    """The systems of ``captions``: one results file or in-memory captions, or a list of them.

    One system in memory is a mapping image id -> caption (a string, or a list: one, or several
    samples) or a COCO results list ``[{"image_id", "caption"}]`` (an image id repeated: samples)."""
    if isinstance(captions, (str, Path, Mapping)) or _is_results_list(captions):
        return [captions]
    systems = list(captions)
    if not systems:
        raise ValueError("no results file given")
    return systems


def results_given(system, references: ReferenceSet, k: int) -> ResultsFile:
    """One system (``systems_given``'s) as a ``ResultsFile``; ``k``: its place, naming it in errors."""
    if isinstance(system, (str, Path)):
        return read_results(system, references)
    source = f"captions {k + 1} ({IN_MEMORY})"
    rows = []
    pairs = ([(row.get("image_id"), row.get("caption")) if isinstance(row, Mapping) else (None, None)
              for row in system] if _is_results_list(system) else list(system.items()) if isinstance(system, Mapping)
             else None)
    if pairs is None:
        raise ValueError(f"{source}: expected a file, a mapping image id -> caption or a list of "
                         f"{{'image_id', 'caption'}}, not {type(system).__name__}")
    for n, (image_id, caption) in enumerate(pairs):
        check_image_id(source, f"entry {n}", image_id)
        several = list(caption) if isinstance(caption, (list, tuple)) else [caption]
        if not several or not all(isinstance(c, str) for c in several):
            raise ValueError(f"{source}: image {image_id!r}: the caption must be a string (or a list of strings)")
        rows += [(f"entry {n}", image_id, c) for c in several]
    if not rows:
        raise ValueError(f"{source}: no captions")
    found = CaptionRows(source, IN_MEMORY, rows)
    samples = match_samples(found, list(references.captions), references.source, references.aliases)
    return _results(source, samples, keyed_by(found, references))


def _is_results_list(value) -> bool:
    """``value`` is a COCO results list held in memory (its first entry a mapping with an ``image_id``)."""
    return isinstance(value, (list, tuple)) and bool(value) and isinstance(value[0], Mapping) and "image_id" in value[0]


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
