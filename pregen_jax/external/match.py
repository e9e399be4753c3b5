"""What a model that lives elsewhere needs to match a search, and attaching it to its numbers.

``pregen-search export-references --out refs.jsonl`` writes, beside the references, a match
file (``refs.match.json``, ``match_path``): the fingerprint a search compares every RefProbs
with (the references' content hash, the models' vocabulary and its hash, the units of a
position), and the vocabulary's tokens, so that a model of any framework can read the search's
vocabulary. ``attach_search_fingerprint`` checks that a model's RefProbs holds exactly those
references, at the search's units, and attaches the search's fingerprint: the file ``predict``
accepts. Attaching it says the model read the references with that vocabulary (the only thing
the helper cannot check).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from .. import io
from ..refprobs import UNKNOWN_VOCABULARY, ReferenceFingerprint, RefProbs, reference_fingerprint
from .references import Reference, check_pieces, exported_captions, read_corpus, references


@dataclasses.dataclass(frozen=True)
class SearchMatch:
    """What a RefProbs must match to be scored against a search.

    references: the fingerprint the search compares with (``ReferenceFingerprint``).
    vocabulary_tokens: the search's vocabulary in id order (empty when its models came ready-made).
    source: where the fingerprint comes from: a finished search's manifest or a config.
    """

    references: ReferenceFingerprint
    vocabulary_tokens: list[str]
    source: str

    def to_json(self) -> str:
        return json.dumps({"references": dataclasses.asdict(self.references), "units": self.references.units,
                           "vocabulary": self.references.vocabulary, "vocabulary_tokens": self.vocabulary_tokens,
                           "source": self.source}, ensure_ascii=False, indent=1)


def export_for_search(config, out, fingerprint: ReferenceFingerprint | None = None,
                      vocabulary_tokens=None, postgen_tokenizer: str | None = None) -> list[Reference]:
    """``pregen-search export-references``: write the references of ``config``'s test split to ``out``
    (JSONL, one ``Reference`` a line, in RefProbs order) and the match file beside it; return the rows.

    ``fingerprint`` (with ``vocabulary_tokens``): a finished search's, from its manifest; None:
    what a search of ``config``'s trained models records (its vocabulary built as the search
    builds it, at ``[pregen] units``). ``postgen_tokenizer``: what the search scores post-gen
    metrics with (a finished search's own; default ``config``'s): ``ptb`` writes each reference's
    raw text too (``Reference.raw``).
    """
    from ..pipeline.sources import build_vocabulary
    from .references import piece_encoder
    _, dataset = read_corpus(config)
    rows = references(dataset["test"], piece_encoder(config, dataset), postgen_tokenizer or config.postgen.tokenizer)
    if fingerprint is None:
        vocab = build_vocabulary(config, dataset)
        fingerprint = reference_fingerprint(dataset["test"].captions, vocab, config.pregen.units)
        vocabulary_tokens, source = list(vocab.tokens), "the config (as a search of its trained models records it)"
    else:
        source = "the finished search's manifest"
    io.write_text("".join(json.dumps(row.to_json(), ensure_ascii=False) + "\n" for row in rows), out)
    write_match(SearchMatch(fingerprint, list(vocabulary_tokens or []), source), out)
    return rows


def match_path(references_path) -> Path:
    """The match file beside an export: ``refs.jsonl`` -> ``refs.match.json``."""
    path = Path(references_path)
    return path.with_name(path.stem + ".match.json")


def write_match(match: SearchMatch, references_path) -> Path:
    path = match_path(references_path)
    io.write_text(match.to_json() + "\n", path)
    return path


def read_match(references_path) -> SearchMatch:
    """The match file beside ``references_path`` (ValueError naming it when missing or damaged)."""
    path = match_path(references_path)
    if not path.is_file():
        raise ValueError(f"{path}: not found: rerun pregen-search export-references (it writes the match file "
                         f"beside {Path(references_path).name})")
    try:
        data = json.loads(io.read_text(path, "match file"))
        fingerprint = ReferenceFingerprint(**{f.name: str(data["references"][f.name])
                                              for f in dataclasses.fields(ReferenceFingerprint)})
        return SearchMatch(fingerprint, [str(t) for t in data.get("vocabulary_tokens", [])], str(data["source"]))
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a match file of export-references ({type(err).__name__}: {err})") from None


def attach_search_fingerprint(ref_probs: RefProbs, references_path) -> RefProbs:
    """``ref_probs`` (a model's numbers on the references exported to ``references_path``) with the
    search's fingerprint from the match file beside it, so that ``pregen-search predict`` scores it.

    Checked first: the RefProbs holds every exported reference in order, with one position per
    word and the end token (word units, as a search's models), or, for a search at token units,
    at least that many. A model that reads pieces gives word units with
    ``RefProbs.to_words(word_starts)`` (the export lists each reference's ``pieces``).
    Raises ``ValueError`` saying what differs and how to fix it.
    """
    match = read_match(references_path)
    captions, image_ids = exported_captions(references_path)
    where = f"{ref_probs.source or 'RefProbs'} against {references_path}"
    if match.references.units == "word":
        try:
            ref_probs.check_references(captions, image_ids, where)
        except ValueError as err:
            raise ValueError(f"{err}; the search's positions are words (a word, then the end token, per reference): "
                             "combine a model's pieces into words with RefProbs.to_words(word_starts)") from None
    else:
        check_pieces(ref_probs, captions, image_ids, where)
    declared = ref_probs.vocabulary
    if declared not in (None, "", UNKNOWN_VOCABULARY, match.references.vocabulary):
        raise ValueError(f"{where}: the model says it reads vocabulary {declared}, the search's models read "
                         f"{match.references.vocabulary}: its numbers are not comparable with the search's "
                         f"(use the search's vocabulary, listed in {match_path(references_path)})")
    return dataclasses.replace(ref_probs, units=match.references.units, references=match.references)
