"""The JSONL ``pregen-search export-references`` writes: one reference a line, in the order a
RefProbs follows (image-major, then the image's references), with the tokenizer that made its
tokens recorded on every line (files written before that record carry none: their tokens are
``alnum-lower``'s, the only tokenizer the exports ever used)."""
from __future__ import annotations

import dataclasses
import json

from .. import io

EXPORT_TOKENIZER = "alnum-lower"
"""The tokenizer of an export's ``tokens`` (the corpus's words, what a model's positions follow)."""


@dataclasses.dataclass(frozen=True)
class Reference:
    """One test reference as a model outside pregen-jax needs it.

    Attributes:
      image_id: the dataset's id of the image (Karpathy ``filename``, the Flickr8k file name,
        the shapes id ``test-00012``): what generated captions are keyed by.
      image: the image's position in the test split (axis I of a RefProbs).
      ref: the reference's position among the image's references (axis R).
      text: the reference as the tokens joined by single spaces (lower case, alphanumeric), so
        that splitting it on spaces gives ``tokens`` back, whatever tokenizer reads it.
      tokens: the words the post-gen metrics see; a word-level RefProbs has len(tokens) + 1
        positions for this reference (the end token last).
      pieces: the model vocabulary's pieces of ``tokens`` (subword vocabularies only).
      tokenizer: what made ``tokens`` from the corpus's captions (``evaluate`` applies the same to
        the captions it scores against this file, where the rows have no ``raw``).
      raw: the reference as the corpus writes it, where the search scores its post-gen metrics with
        ``ptb`` on that text (``evaluate`` then reads ``raw`` and applies ``ptb``, as the search
        did); None: ``text`` is what the post-gen metrics read.
    """

    image_id: str
    image: int
    ref: int
    text: str
    tokens: list[str]
    pieces: list[str] | None = None
    tokenizer: str = EXPORT_TOKENIZER
    raw: str | None = None

    def to_json(self) -> dict:
        row = dataclasses.asdict(self)
        for key in ("pieces", "raw"):
            if row[key] is None:
                del row[key]
        return row


_TYPES = {"image_id": str, "image": int, "ref": int, "text": str}


def read_exported_references(path) -> list[Reference]:
    """The rows of an ``export-references`` file, in file order, each checked (blank lines skipped)."""
    rows: list[Reference] = []
    for line_no, line in enumerate(io.read_text(path, "references file").split("\n"), 1):
        if line.strip():
            rows.append(_row(path, line_no, line))
    if not rows:
        raise ValueError(f"{path}: no references (an export-references file has one JSON object a line)")
    return rows


def _row(path, line_no: int, line: str) -> Reference:
    where = f"{path}: line {line_no}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as err:
        raise ValueError(f"{where}: not valid JSON ({err.msg})") from None
    if not isinstance(row, dict):
        raise ValueError(f"{where}: not a row of export-references (a JSON object with image_id, image, ref, text, "
                         "tokens)")
    missing = [key for key in (*_TYPES, "tokens") if key not in row]
    if missing:
        raise ValueError(f"{where}: not a row of export-references (no {', '.join(map(repr, missing))})")
    unknown = sorted(set(row) - {f.name for f in dataclasses.fields(Reference)})
    if unknown:
        raise ValueError(f"{where}: not a row of export-references (unknown key {unknown[0]!r})")
    for key, kind in _TYPES.items():
        if not isinstance(row[key], kind) or isinstance(row[key], bool):
            raise ValueError(f"{where}: {key} = {json.dumps(row[key])[:40]} is not {'a string' if kind is str else 'an integer'}")
    for key in ("tokens", "pieces"):
        value = row.get(key)
        if (key == "tokens" or value is not None) and not (isinstance(value, list) and all(isinstance(t, str) for t in value)):
            raise ValueError(f"{where} (image {row['image_id']!r}): {key} is not a list of strings")
    if not isinstance(row.get("tokenizer", EXPORT_TOKENIZER), str):
        raise ValueError(f"{where}: tokenizer is not a string")
    if not isinstance(row.get("raw", ""), str):
        raise ValueError(f"{where} (image {row['image_id']!r}): raw is not a string")
    return Reference(**row)
