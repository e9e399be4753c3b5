"""Captions a model generated elsewhere, one per image of a split, tokenised: any form
``captionfiles`` reads (a COCO results file, JSONL or TSV keyed by image id, or one caption a line
in split order), every image of the split needing exactly one caption.

This is what a search reads for its ready-made models (``[[precomputed]]``), which it scores
on the package tokenizer's words: a caption with no token is refused. Errors name the file, the
line (or entry) and the image at fault.
"""
from __future__ import annotations

from ..captionfiles import match_captions, parse_captions
from .corpus import tokenize


def read_generated_captions(path, image_ids: list[str], source: str = "the test split",
                            aliases: dict | None = None) -> list[list[str]]:
    """The caption of each image, tokenised, in the order of ``image_ids`` (``source`` names the
    images in errors; ``aliases``: other ids of the images, ``CaptionSplit.aliases``).

    Returns captions[n]: the tokens of image ``image_ids[n]``'s caption (never empty).
    """
    found = parse_captions(path)
    for n, (where, image_id, caption) in enumerate(found.rows):  # before matching: the row as the file has it
        if not tokenize(caption):
            image = image_id if found.form != "lines" else (image_ids[n] if n < len(image_ids) else None)
            raise ValueError(f"{path}: {where} (image {image!r}): an empty caption (zero tokens after tokenisation)")
    captions = match_captions(found, image_ids, source, aliases)
    return [tokenize(captions[image_id]) for image_id in image_ids]


def read_caption_texts(path, image_ids: list[str], source: str = "the test split",
                       aliases: dict | None = None) -> list[str]:
    """The caption of each image as the file writes it (what ``ptb`` reads), in the order of
    ``image_ids``, checked as ``read_generated_captions`` checks it."""
    read_generated_captions(path, image_ids, source, aliases)
    captions = match_captions(parse_captions(path), image_ids, source, aliases)
    return [captions[image_id] for image_id in image_ids]
