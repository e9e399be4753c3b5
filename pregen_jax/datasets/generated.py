"""Captions a model generated elsewhere, one per test image: JSONL or TSV keyed by image id, or
one caption a line in test-split order.

The format is read from the file itself:
  - JSONL: every non-blank line a JSON object ``{"image_id": ..., "caption": ...}`` (other keys
    are allowed and ignored; a number as ``image_id`` is read as its decimal string);
  - TSV: a header line naming an ``image_id`` and a ``caption`` column (other columns ignored),
    then one row per image;
  - anything else: one caption a line, line n for the n-th test image (the original format).
Keyed files may list the images in any order; every test image needs exactly one caption and
no other image may appear. Errors name the file, the line and the first image id at fault.
"""
from __future__ import annotations

import json
from pathlib import Path

from .. import io
from .corpus import tokenize

KEYED_SUFFIXES = {".jsonl": "JSONL", ".json": "JSONL", ".tsv": "TSV"}


def read_generated_captions(path, image_ids: list[str]) -> list[list[str]]:
    """The caption of each test image, tokenised, in the order of ``image_ids``.

    Returns captions[n]: the tokens of image ``image_ids[n]``'s caption (never empty).
    """
    path = Path(path)
    text = io.read_text(path, "caption file").removeprefix("\ufeff")
    # Lines end at \n only (\r\n too): str.splitlines would also split inside a caption at
    # U+2028 and friends, and shift every later caption by a line.
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines[-1] == "":
        lines.pop()
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("{"):
        keyed = _jsonl_rows(path, lines)
    elif lines and "image_id" in _header(lines[0]):
        keyed = _tsv_rows(path, lines)
    elif path.suffix.lower() in KEYED_SUFFIXES:
        kind = KEYED_SUFFIXES[path.suffix.lower()]
        expected = ('a JSON object {"image_id": ..., "caption": ...} a line' if kind == "JSONL"
                    else "a header line with columns image_id<TAB>caption")
        raise ValueError(f"{path}: line 1 does not start {kind} ({expected})")
    else:
        return _plain_lines(path, lines, len(image_ids))
    return _by_image(path, keyed, image_ids)


def _plain_lines(path: Path, lines: list[str], num_images: int) -> list[list[str]]:
    if len(lines) != num_images:
        raise ValueError(f"{path}: {len(lines)} captions but the test split has {num_images} images (one caption a "
                         "line in test-split order, or JSONL/TSV keyed by image_id in any order)")
    captions = [tokenize(line) for line in lines]
    empty = [n for n, c in enumerate(captions) if not c]
    if empty:
        raise ValueError(f"{path}: line {empty[0] + 1} is an empty caption (zero tokens after tokenisation)")
    return captions


def _jsonl_rows(path: Path, lines: list[str]) -> list[tuple[int, str, str]]:
    """(line number, image id, caption) of every non-blank line."""
    rows = []
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}, line {line_no}: not valid JSON ({err.msg})") from None
        if not isinstance(row, dict) or "image_id" not in row or "caption" not in row:
            raise ValueError(f'{path}, line {line_no}: expected an object with "image_id" and "caption"')
        image_id, caption = row["image_id"], row["caption"]
        if isinstance(image_id, bool) or not isinstance(image_id, (str, int)):
            raise ValueError(f"{path}, line {line_no}: image_id must be a string (or an integer), got {image_id!r}")
        if not isinstance(caption, str):
            raise ValueError(f"{path}, line {line_no} (image {image_id!r}): caption must be a string, got {caption!r}")
        rows.append((line_no, str(image_id), caption))
    return rows


def _tsv_rows(path: Path, lines: list[str]) -> list[tuple[int, str, str]]:
    """(line number, image id, caption) of every non-blank row under the header."""
    header = _header(lines[0])
    if "caption" not in header:
        raise ValueError(f"{path}, line 1: the header names image_id but no caption column")
    if len(set(header)) != len(header):
        raise ValueError(f"{path}, line 1: the header names a column twice: {header}")
    id_col, caption_col = header.index("image_id"), header.index("caption")
    rows = []
    for line_no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise ValueError(f"{path}, line {line_no}: {len(fields)} tab-separated fields, the header has "
                             f"{len(header)} (a tab inside a caption?)")
        rows.append((line_no, fields[id_col].strip(), fields[caption_col]))
    return rows


def _header(line: str) -> list[str]:
    return [name.strip() for name in line.split("\t")]


def _by_image(path: Path, rows: list[tuple[int, str, str]], image_ids: list[str]) -> list[list[str]]:
    position = {image_id: n for n, image_id in enumerate(image_ids)}
    captions: list[list[str] | None] = [None] * len(image_ids)
    line_of: dict[str, int] = {}
    for line_no, image_id, caption in rows:
        if image_id not in position:
            raise ValueError(f"{path}, line {line_no}: image id {image_id!r} is not in the test split "
                             f"(its ids look like {image_ids[0]!r})")
        if image_id in line_of:
            raise ValueError(f"{path}, line {line_no}: image {image_id!r} already has a caption on line "
                             f"{line_of[image_id]}")
        tokens = tokenize(caption)
        if not tokens:
            raise ValueError(f"{path}, line {line_no}: image {image_id!r} has an empty caption (zero tokens after "
                             "tokenisation)")
        line_of[image_id] = line_no
        captions[position[image_id]] = tokens
    missing = [image_id for image_id, caption in zip(image_ids, captions) if caption is None]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise ValueError(f"{path}: no caption for test image {missing[0]!r}{more} (every test image needs one)")
    return captions
