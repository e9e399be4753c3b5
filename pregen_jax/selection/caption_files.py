"""Caption files raced alone, against a references file: ``pregen-search select --references REFS
--captions A B C`` (no search needed).

The files are read as ``evaluate`` reads them (``captionfiles``: a COCO results file, JSONL, TSV
or one caption a line; every file covering the same images of REFS), and tokenized as
``evaluate`` tokenizes them (``ptb`` by default, an export's own tokenizer for its JSONL). The
race is on the images the files cover, in REFS's order, and CIDEr-D takes its document
frequencies from every image of REFS, so each image scored gets the score ``evaluate --idf-from
all`` gives it: every estimate targets the file's ``evaluate --idf-from all`` score, and a file
scored on every image (``--budget 1``) gets exactly that score (``whole_split_score``).
"""
from __future__ import annotations

import dataclasses
import warnings

from ..captionfiles import ReferenceSet
from ..datasets.caption_fit import warn_if_misfit
from ..evaluation.inputs import read_results, scored_images
from ..evaluation.tokenizers import check_tokenizer, tokenize_all
from ..pipeline.config import model_label
from ..ranking.racing import RaceSettings
from .race import Candidate, Selection, check_metric, lookup, race_candidates, race_signature


@dataclasses.dataclass(frozen=True)
class FileRace:
    """What a race of caption files reads, tokenized.

    images: REFS's keys of the images raced (those the files cover), in REFS's order: race image i.
    references: references[i][r]: tokens of reference r of race image i.
    idf_from: CIDEr-D's reference set, every image of REFS in its order (race image i under key i,
      the others under negative keys).
    captions: captions[f][i]: tokens of file f's caption of race image i.
    tokenizer: the tokenizer's name.
    """

    images: list
    references: list
    idf_from: dict
    captions: list
    tokenizer: str


def read_file_race(references: ReferenceSet, paths, tokenizer: str | None = None) -> FileRace:
    """Read ``paths`` against ``references`` (every check before any tokenizing), and tokenize
    references and captions in one run of ``tokenizer`` (default: the references' own, else ptb)."""
    tokenizer = tokenizer or references.tokenizer or "ptb"
    check_tokenizer(tokenizer, references.tokenized, references.path)
    systems = [read_results(path, references) for path in paths]
    images = scored_images(references, systems)
    for system in systems:
        empty = [i for i in images if not system.captions[i].strip()]
        if empty:
            warnings.warn(f"{system.path}: {len(empty)} empty caption(s) (first: image {empty[0]!r}), scored as the "
                          "toolkits score them", stacklevel=2)
    warn_if_misfit([references.captions[i] for i in images], [[s.captions[i] for i in images] for s in systems],
                   [str(s.path) for s in systems])  # captions of other images? (the own-image check)
    every = list(references.captions)
    strings = [c for i in every for c in references.captions[i]] + [s.captions[i] for s in systems for i in images]
    tokens = iter(text.split() for text in tokenize_all(strings, tokenizer))
    refs = {i: [next(tokens) for _ in references.captions[i]] for i in every}
    captions = [[next(tokens) for _ in images] for _ in systems]
    position = {key: k for k, key in enumerate(images)}
    idf_from = {position.get(key, -1 - k): refs[key] for k, key in enumerate(every)}
    return FileRace(images, [refs[i] for i in images], idf_from, captions, tokenizer)


def select_files(references: ReferenceSet, paths, metric: str, settings: RaceSettings, tokenizer: str | None = None,
                 exact: bool = False):
    """``pregen-search select --references``: the caption files ``paths`` on ``references``, every
    file on every image (``exact``, or a budget of 1: with ``evaluate``'s paired test, whose
    ``diff``/``diff_low``/``diff_high``/``p_adjusted`` join the table) or raced as ``settings`` say.

    Returns (the select.tsv table, the ``Selection``, the ``FileRace``). The table has each file's
    race row and, where the race scored a file on every image, its ``whole_split_score``
    (``evaluate --idf-from all``'s score of that file); elsewhere NaN: the estimate is the race's,
    from a subset."""
    import pandas as pd
    check_metric(metric)
    found = read_file_race(references, paths, tokenizer)
    names = [model_label("captions", str(path), "") for path in paths]
    candidates = [Candidate(name, lookup(captions)) for name, captions in zip(names, found.captions)]
    selection: Selection = race_candidates(candidates, found.references, metric, settings, {}, found.idf_from,
                                           tokenized=True, exact=exact)
    ids = pd.DataFrame({"architecture": "captions", "run": [str(p) for p in paths], "epoch": "", "source": "captions"})
    table = pd.concat([ids, selection.race.table.drop(columns=["candidate"])], axis=1)
    table["whole_split_score"] = selection.whole_split_scores()
    if selection.paired is not None:
        table = pd.concat([table, selection.paired.drop(columns=["better"])], axis=1)
    table["metric"] = metric
    table["images"] = len(found.images)
    table["references"] = references.source
    table["tokenizer"] = found.tokenizer
    table["signature"] = race_signature(metric, found.tokenizer, found.references)
    return table, selection, found
