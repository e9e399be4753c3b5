"""Caption files, one caption per image, in whichever form a user has:

- a COCO results file: a JSON list ``[{"image_id": ..., "caption": ...}]`` (other keys ignored);
- JSONL: every non-blank line a JSON object with ``image_id`` and ``caption`` (other keys ignored);
- TSV: a header line naming an ``image_id`` and a ``caption`` column (other columns ignored), then
  one row per image;
- anything else: one caption a line, line n for the n-th image of the references.

Several captions per image (samples, which ``evaluate``'s diversity metrics read): a COCO results
file or JSONL whose ``image_id`` repeats, or whose ``caption`` is a list of strings, or one JSON
object mapping each image id to its list of captions. A file mixes no shapes (a caption a string
in one row and a list in another is refused); ``match_samples`` keys them to images.

The form is read from the file itself (a ``.json``, ``.jsonl`` or ``.tsv`` name that fits none of
the keyed forms is refused rather than read as lines). Lines end at ``\\n`` only (``\\r\\n`` too):
``str.splitlines`` would also split inside a caption at U+2028 and friends, and shift every later
caption by a line.

``parse_captions`` checks the file's form alone; ``match_captions`` keys each caption to an image
of the references: an id matches a key equal to it, an alias of one (a Karpathy ``filename``), or
a key with the same decimal string (``1`` and ``"1"``) where only one such key exists. An empty
caption is kept (the commands score it as the toolkits do, with a warning).
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

from .. import io
from .references import ReferenceSet, check_image_id

FORMS = ("coco-results", "jsonl", "tsv", "lines", "json-lists")
_SUFFIX_FORMS = {".json": ("a COCO results file (a JSON list of {\"image_id\", \"caption\"}) or JSONL "
                           "(a JSON object with image_id and caption a line)"),
                 ".jsonl": 'JSONL (a JSON object {"image_id": ..., "caption": ...} a line)',
                 ".tsv": "TSV (a header line with columns image_id<TAB>caption)"}


@dataclasses.dataclass(frozen=True)
class CaptionRows:
    """A caption file's rows as found, its form checked.

    Attributes:
      path: the file; form: one of ``FORMS``.
      rows: (where, image_id, caption) in file order; ``where`` names the row in errors
        ("line 3", "entry 2"); ``image_id`` is None for one caption a line.
    """

    path: str
    form: str
    rows: list[tuple[str, object, str]]


def parse_captions(path, samples: bool = False) -> CaptionRows:
    """The rows of a caption file in any of the four forms, each checked (ValueError, one line);
    ``samples``: a caption may be a list of captions, and one JSON object image id -> list is a
    form too (several captions per image: ``match_samples``)."""
    found = _parse(Path(path), samples)
    if not found.rows:
        raise ValueError(f"{path}: no captions in it (an empty caption file)")
    return found


def _parse(path: Path, samples: bool = False) -> CaptionRows:
    text = io.read_text(path, "caption file")
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if lines[-1] == "":
        lines.pop()
    first = next((line.lstrip() for line in lines if line.strip()), "")
    if first.startswith("["):
        return CaptionRows(str(path), "coco-results", _results_list(path, text, samples))
    if first.startswith("{"):
        lists = _image_lists(path, text) if samples else None
        if lists is not None:
            return CaptionRows(str(path), "json-lists", lists)
        return CaptionRows(str(path), "jsonl", _jsonl_rows(path, lines, text, samples))
    if lines and "image_id" in _header(lines[0]):
        return CaptionRows(str(path), "tsv", _tsv_rows(path, lines))
    if path.suffix.lower() in _SUFFIX_FORMS:
        raise ValueError(f"{path}: line 1 does not start {_SUFFIX_FORMS[path.suffix.lower()]}")
    return CaptionRows(str(path), "lines", [(f"line {n}", None, line) for n, line in enumerate(lines, 1)])


def _results_list(path: Path, text: str, samples: bool = False) -> list[tuple[str, object, str]]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: a results file is a JSON list of {{\"image_id\", \"caption\"}}")
    return _one_shape(path, [_rows(path, f"entry {k}", row, samples) for k, row in enumerate(data)])


def _image_lists(path: Path, text: str) -> list[tuple[str, object, str]] | None:
    """The rows of one JSON object image id -> list of captions (or one caption each); None where
    the text is not one such object (JSONL, a COCO annotation file)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict) or not data or "image_id" in data or {"annotations", "images"} & set(data):
        return None
    return _one_shape(path, [_rows(path, f"image {key!r}", {"image_id": key, "caption": value}, True)
                             for key, value in data.items()])


def _one_shape(path: Path, found: list[tuple[bool, list]]) -> list[tuple[str, object, str]]:
    """The rows of (is a list, rows) per entry, where every entry has one shape (ValueError naming the
    first that differs: a caption a string in one and a list in another)."""
    shapes = [is_list for is_list, _ in found]
    if shapes and any(shapes) and not all(shapes):
        k = shapes.index(not shapes[0])
        where = found[k][1][0][0] if found[k][1] else f"entry {k}"
        kinds = ("a list of captions", "one caption string")
        raise ValueError(f"{path}: {where}: {kinds[not shapes[k]]} where the first entry has {kinds[shapes[k]]} "
                         "(a file gives every image's captions in one shape)")
    return [row for _, rows in found for row in rows]


def _jsonl_rows(path: Path, lines: list[str], text: str, samples: bool = False) -> list[tuple[str, object, str]]:
    if _is_json_object(text) and {"annotations", "images"} & set(json.loads(text)):
        raise ValueError(f"{path}: one JSON object, not captions (a COCO results file is a list of "
                         "{\"image_id\", \"caption\"}; references given as captions?)")
    rows = []
    for line_no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: line {line_no}: not valid JSON ({err.msg})") from None
        rows.append(_rows(path, f"line {line_no}", row, samples))
    return _one_shape(path, rows)


def _is_json_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def _rows(path: Path, where: str, row, samples: bool = False) -> tuple[bool, list[tuple[str, object, str]]]:
    """(whether the caption is a list, the entry's rows): one row, or (``samples``) one per caption of a list."""
    if not isinstance(row, dict) or "image_id" not in row or "caption" not in row:
        raise ValueError(f'{path}: {where}: expected an object with "image_id" and "caption"')
    image_id, caption = row["image_id"], row["caption"]
    check_image_id(path, where, image_id)
    if samples and isinstance(caption, list) and caption and all(isinstance(c, str) for c in caption):
        return True, [(f"{where} caption {k}" if len(caption) > 1 else where, image_id, c) for k, c in enumerate(caption)]
    if not isinstance(caption, str):
        also = " or a list of strings" if samples else ""
        raise ValueError(f"{path}: {where} (image {image_id!r}): caption is not a string{also} "
                         f"({json.dumps(caption)[:40]})")
    return False, [(where, image_id, caption)]


def _tsv_rows(path: Path, lines: list[str]) -> list[tuple[str, object, str]]:
    header = _header(lines[0])
    if "caption" not in header:
        raise ValueError(f"{path}: line 1: the header names image_id but no caption column")
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: line 1: the header names a column twice: {header}")
    id_col, caption_col = header.index("image_id"), header.index("caption")
    rows = []
    for line_no, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != len(header):
            raise ValueError(f"{path}: line {line_no}: {len(fields)} tab-separated fields, the header has "
                             f"{len(header)} (a tab inside a caption?)")
        rows.append((f"line {line_no}", fields[id_col].strip(), fields[caption_col]))
    return rows


def _header(line: str) -> list[str]:
    return [name.strip() for name in line.split("\t")]


def match_captions(found: CaptionRows, keys: Sequence, source: str, aliases: dict | None = None,
                   complete: bool = True) -> dict:
    """image key -> caption for the rows of ``found``, keyed to ``keys`` (the references' images, in
    order; ``source`` names them in errors, e.g. "the val split of flickr8k"); in file order (one
    caption a line: in ``keys``' order). ``complete``: every key needs a caption (else a subset of
    the images is allowed, as COCOEvalCap scores the images of the results)."""
    path = found.path
    if found.form == "lines":
        if len(found.rows) != len(keys):
            raise ValueError(f"{path}: {len(found.rows)} captions but {source} has {len(keys)} images (one caption "
                             "a line in the references' image order, or a file keyed by image_id in any order)")
        return {key: caption for key, (_, _, caption) in zip(keys, found.rows)}
    resolve = _resolver(keys, aliases or {})
    captions: dict = {}
    first_at: dict = {}
    for where, image_id, caption in found.rows:
        key = resolve(image_id)
        if key is None:
            raise ValueError(f"{path}: {where}: image {image_id!r} is not in {source} (its ids look like "
                             f"{next(iter(keys))!r})")
        if key in captions:
            raise ValueError(f"{path}: {where}: image {image_id!r} already has a caption ({first_at[key]}; one "
                             "caption per image)")
        captions[key], first_at[key] = caption, where
    if complete:
        missing = [key for key in keys if key not in captions]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise ValueError(f"{path}: no caption for image {missing[0]!r}{more} of {source} (every image needs one)")
    return captions


def match_samples(found: CaptionRows, keys: Sequence, source: str, aliases: dict | None = None) -> dict:
    """image key -> its captions (a list, in file order) for the rows of ``found``, each image of
    ``keys`` at most once as ``match_captions`` keys it; an image may have several rows (samples),
    every image the same number (else ValueError naming the first that differs)."""
    if found.form == "lines":
        return {key: [caption] for key, caption in match_captions(found, keys, source, aliases, False).items()}
    resolve = _resolver(keys, aliases or {})
    samples: dict = {}
    at: dict = {}  # image -> where each of its rows is
    for where, image_id, caption in found.rows:
        key = resolve(image_id)
        if key is None:
            raise ValueError(f"{found.path}: {where}: image {image_id!r} is not in {source} (its ids look like "
                             f"{next(iter(keys))!r})")
        samples.setdefault(key, []).append(caption)
        at.setdefault(key, []).append(where)
    sizes = {key: len(captions) for key, captions in samples.items()}
    first = next(iter(sizes))
    other = next((key for key in sizes if sizes[key] != sizes[first]), None)
    if other is None:
        return samples
    if sizes[first] == 1:  # one caption per image, but not for this one: the row that repeats it
        twice = next(key for key in sizes if sizes[key] > 1)
        raise ValueError(f"{found.path}: {at[twice][1]}: image {twice!r} already has a caption ({at[twice][0]}; one "
                         f"caption per image, or the same number of samples for every image: image {first!r} has 1)")
    raise ValueError(f"{found.path}: {at[other][0]}: image {other!r} has {sizes[other]} caption(s) but image {first!r} "
                     f"({at[first][0]}) has {sizes[first]} (every image needs the same number of samples)")


def _resolver(keys: Sequence, aliases: dict):
    """image id -> its key (None: not found): the id itself, an alias, or the one key with its decimal string."""
    exact = set(keys)
    by_text: dict = {}
    for key in keys:
        by_text.setdefault(str(key), []).append(key)

    def resolve(image_id):
        if image_id in exact:
            return image_id
        if str(image_id) in aliases:
            return aliases[str(image_id)]
        twins = by_text.get(str(image_id), [])
        return twins[0] if len(twins) == 1 else None
    return resolve


def read_caption_file(path, references: ReferenceSet, complete: bool = False) -> dict:
    """image key -> caption of a caption file in any form, matched to ``references``' images."""
    return match_captions(parse_captions(path), list(references.captions), references.source, references.aliases,
                          complete)
