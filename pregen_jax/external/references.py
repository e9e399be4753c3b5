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
import types
from collections.abc import Callable

from .. import io
from ..captionfiles import Reference, read_exported_references
from ..datasets import CaptionDataset, CaptionSplit, ShapesConfig, load_shapes, read_flickr8k, read_karpathy_json
from ..pipeline.config import MIN_TEST_IMAGES, SearchConfig
from ..refprobs import UNKNOWN_VOCABULARY, RefProbs, reference_fingerprint

PieceEncoder = Callable[[list[str]], list[str]]
"""A subword vocabulary's split of one reference's words into its pieces (tokens -> pieces)."""


def read_corpus(config: SearchConfig) -> tuple[str, CaptionDataset]:
    """The corpus exactly as ``sources.load_data`` reads it, without image features or an
    encoder, its test split checked: (the dataset's description, the dataset)."""
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
    return name, dataset


def read_split(config: SearchConfig, split: str = "test") -> CaptionSplit:
    """A split of the corpus a search reads (``test``: the references it scores; ``val``: the images
    ``select`` races on by default), checked as a search checks it."""
    _, dataset = read_corpus(config)
    if split not in dataset.splits:
        raise ValueError(f"{dataset.name}: no {split} split (it has {', '.join(dataset.splits)})")
    return dataset[split]


def read_test_split(config: SearchConfig) -> tuple[str, CaptionSplit]:
    """The test split a search scores: (the dataset's description, the split)."""
    name, dataset = read_corpus(config)
    return name, dataset["test"]


def references(test: CaptionSplit, pieces: PieceEncoder | None = None, postgen_tokenizer: str = "alnum-lower"
               ) -> list[Reference]:
    """Every reference of ``test``, image-major then reference: the order of a RefProbs's [I, R] axes;
    with its raw text where the search scores post-gen metrics with ``ptb`` on it (``Reference.raw``)."""
    raw = test.raw if postgen_tokenizer == "ptb" else None
    return [Reference(image_id, i, r, " ".join(tokens), list(tokens), pieces(tokens) if pieces else None,
                      raw=raw[i][r] if raw is not None else None)
            for i, (image_id, refs) in enumerate(zip(test.image_ids, test.captions))
            for r, tokens in enumerate(refs)]


def piece_encoder(config: SearchConfig, dataset: CaptionDataset) -> PieceEncoder | None:
    """The pieces of the models' vocabulary, or None for a word vocabulary (a word is one
    position: ``tokens`` already says it).

    A subword vocabulary is the one a search would use: ``[models] vocabulary`` (a run's
    ``tokenizer.json``: pieces exactly as that run's models read them), else a BPE trained on
    the train captions, as a search trains it.
    """
    if config.data.tokenizer == "word":
        return None
    from ..pipeline.sources import build_vocabulary
    vocab = build_vocabulary(config, dataset)
    return lambda tokens: [vocab.tokens[i] for i in vocab.encode(tokens)]


def export_references(config: SearchConfig, out) -> list[Reference]:
    """Write ``out`` (JSONL, one ``Reference`` a line) for ``config``'s test split and return the rows
    (``match.export_for_search`` writes the match file beside it too)."""
    _, dataset = read_corpus(config)
    rows = references(dataset["test"], piece_encoder(config, dataset), config.postgen.tokenizer)
    io.write_text("".join(json.dumps(row.to_json(), ensure_ascii=False) + "\n" for row in rows), out)
    return rows


def exported_captions(path) -> tuple[list[list[list[str]]], list[str]]:
    """The references of an export as ``captions[i][r]`` token lists, and the image ids."""
    captions: list[list[list[str]]] = []
    image_ids: list[str] = []
    for row in read_exported_references(path):
        if row.image == len(captions):
            captions.append([])
            image_ids.append(row.image_id)
        captions[row.image].append(row.tokens)
    return captions, image_ids


def attach_references(ref_probs: RefProbs, path) -> RefProbs:
    """``ref_probs`` computed by a model elsewhere on the references exported to ``path``, with
    those references' fingerprint attached (``RefProbs.references``) and the model's own
    vocabulary (``ref_probs.vocabulary``, or unknown): what a search of ready-made models
    (``[[precomputed]]``) reads. To score a model against a search of trained models, attach that
    search's fingerprint instead (``match.attach_search_fingerprint``).

    A RefProbs with one position per word and the end token (``len(tokens) + 1`` per reference:
    a word vocabulary, or pieces combined into words with ``word_starts``) is at word level,
    whatever its ``units`` said; one with other lengths must be at token level (its positions
    are the model's pieces). Raises ``ValueError`` naming the image and reference that do not match.
    """
    captions, image_ids = exported_captions(path)
    where = f"{ref_probs.source or 'RefProbs'} against {path}"
    try:
        ref_probs.check_references(captions, image_ids, where)
        units = "word"
    except ValueError:
        if ref_probs.units != "token":
            raise
        check_pieces(ref_probs, captions, image_ids, where)
        units = "token"  # the model's pieces: how many a word has is the model's business
    anonymous = types.SimpleNamespace(name=UNKNOWN_VOCABULARY, tokens=[], fingerprint=lambda: UNKNOWN_VOCABULARY)
    fingerprint = reference_fingerprint(captions, anonymous, units)
    fingerprint = dataclasses.replace(fingerprint, vocabulary=ref_probs.vocabulary or UNKNOWN_VOCABULARY)
    return dataclasses.replace(ref_probs, units=units, references=fingerprint)


def check_pieces(ref_probs: RefProbs, captions, image_ids, where: str) -> None:
    """What a token-level RefProbs must have: the images, each image's references, and at least a
    piece per word plus the end token in each."""
    if ref_probs.num_images != len(captions):
        raise ValueError(f"{where}: {ref_probs.num_images} images, but the references have {len(captions)}")
    lengths = ref_probs.lengths
    for i, refs in enumerate(captions):
        have = int((lengths[i] > 0).sum())
        if have != len(refs):
            raise ValueError(f"{where}: image {i} ({image_ids[i]}) has {have} references, the export {len(refs)}")
        for r, tokens in enumerate(refs):
            if lengths[i, r] < len(tokens) + 1:
                raise ValueError(f"{where}: image {i} ({image_ids[i]}), reference {r} has {lengths[i, r]} positions, "
                                 f"fewer than its {len(tokens)} words + the end token")
