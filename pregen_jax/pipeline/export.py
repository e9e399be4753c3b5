"""The test references a search scores, written out for a model that lives elsewhere.

``pregen-search export-references`` writes one JSON object a line, one per test reference, in
exactly the order a RefProbs follows: image-major (the test split's order), then the corpus's
order of that image's references. A model in any framework reads the file, scores each
reference, and hands the numbers back (``RefProbs.from_log_probs``); its captions come back
keyed by ``image_id``. Nothing is trained and no image features are read: only the corpus.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

from .. import io
from ..datasets import CaptionSplit, ShapesConfig, load_shapes, read_flickr8k, read_karpathy_json
from .config import MIN_TEST_IMAGES, SearchConfig

PieceEncoder = Callable[[list[str]], list[str]]
"""A subword vocabulary's split of one reference's words into its pieces (tokens -> pieces)."""


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
    """

    image_id: str
    image: int
    ref: int
    text: str
    tokens: list[str]
    pieces: list[str] | None = None

    def to_json(self) -> dict:
        row = dataclasses.asdict(self)
        if self.pieces is None:
            del row["pieces"]
        return row


def read_test_split(config: SearchConfig) -> tuple[str, CaptionSplit]:
    """The test split exactly as ``sources.load_data`` reads it, without image features or an
    encoder: (the dataset's description, the split)."""
    data = config.data
    if data.source == "shapes":
        dataset = load_shapes(ShapesConfig(data.train, data.val, data.test, seed=data.seed))
        name = f"built-in shapes v1 (seed {data.seed}, {data.train}/{data.val}/{data.test})"
    else:
        dataset = (read_karpathy_json(data.karpathy_json) if data.source == "karpathy"
                   else read_flickr8k(data.flickr8k_dir))
        name = f"{dataset.name} ({data.source})"
        if "test" not in dataset.splits:
            raise ValueError(f"{data.karpathy_json or data.flickr8k_dir}: the corpus has no test split")
    test = dataset["test"]
    test.check(f"{name} test split")
    if len(test) < MIN_TEST_IMAGES:
        raise ValueError(f"{name}: the test split has {len(test)} images; the 15 strata need at least "
                         f"{MIN_TEST_IMAGES}")
    return name, test


def references(test: CaptionSplit, pieces: PieceEncoder | None = None) -> list[Reference]:
    """Every reference of ``test``, image-major then reference: the order of a RefProbs's [I, R] axes."""
    return [Reference(image_id, i, r, " ".join(tokens), list(tokens), pieces(tokens) if pieces else None)
            for i, (image_id, refs) in enumerate(zip(test.image_ids, test.captions))
            for r, tokens in enumerate(refs)]


def piece_encoder(config: SearchConfig) -> PieceEncoder | None:
    """The pieces of the model vocabulary the config names, or None for a word vocabulary (a
    word is one position: ``tokens`` already says it)."""
    tokenizer = getattr(config.data, "tokenizer", "word")
    if tokenizer == "word":
        return None
    raise ValueError(f"[data] tokenizer = {tokenizer!r}: export-references cannot split references into its "
                     "pieces yet")


def export_references(config: SearchConfig, out) -> list[Reference]:
    """Write ``out`` (JSONL, one ``Reference`` a line) for ``config``'s test split and return the rows."""
    _, test = read_test_split(config)
    rows = references(test, piece_encoder(config))
    io.write_text("".join(json.dumps(row.to_json(), ensure_ascii=False) + "\n" for row in rows), out)
    return rows


def read_references(path) -> list[Reference]:
    """The rows of an ``export-references`` file, in file order."""
    rows = []
    for line_no, line in enumerate(io.read_text(path, "references file").splitlines(), 1):
        try:
            rows.append(Reference(**json.loads(line)))
        except (ValueError, TypeError) as err:
            raise ValueError(f"{path}, line {line_no}: not a row of export-references ({err})") from None
    return rows
