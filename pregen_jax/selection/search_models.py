"""A finished search's models as race candidates (``race.Candidate``), and ``run_select``, the
race behind ``pregen-search select``.

A saved model of this package decodes the images a race asks for as the search did (its beam,
lengths); its prior is the validation perplexity its training logged. A model that exists only
as captions looks them up.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..pipeline.config import model_label
from ..ranking.racing import RaceSettings
from .race import Candidate, check_metric, lookup, race_candidates, race_signature


def logged_perplexity(path) -> float:
    """The validation perplexity training logged for a saved model (NaN when it logged none): a
    snapshot records its epoch's, a final model the history entry of the epoch it kept."""
    from ..training import checkpoints
    _, meta = checkpoints.load(path)
    if "val_perplexity" in meta:
        return float(meta["val_perplexity"])
    for record in meta.get("history", []):
        if record.get("epoch") == meta.get("epoch") and record.get("val_perplexity") is not None:
            return float(record["val_perplexity"])
    return math.nan


def _bucket(n: int) -> int:
    """The batch a round of ``n`` images is decoded in: the next power of two (at most 256), so
    that rounds of every size reuse a few compiled programs."""
    return min(256, 1 << max(n - 1, 1).bit_length())


def model_candidate(name: str, path, data, generation, split: str) -> Candidate:
    """A saved model of this package: decodes the asked images of ``split`` as the search did."""
    from ..captioning import generate_captions, load_trained
    trained = load_trained(path, data.vocab)
    features = data.dataset[split].features

    def generate(images):
        images = np.asarray(images)
        return generate_captions(trained.model, trained.params, features[images], data.vocab, generation.beam_width,
                                 generation.max_len, generation.min_len, batch_size=_bucket(len(images)),
                                 progress=False)

    return Candidate(name, generate, logged_perplexity(path))


def search_candidates(run, data, split: str, checkpoints=(), captions=()) -> tuple[list[Candidate], list[dict],
                                                                                    list[str]]:
    """Candidates from a finished search (``FinishedSearch``), extra checkpoint files, and models
    that exist only as captions of ``split``'s images (``captions``: one file each, JSONL/TSV keyed
    by image_id or one caption a line in split order; each checked against the references, with a
    warning when it looks like captions of other images).

    Returns (candidates, their identity rows: architecture, run, epoch, source; notes on models
    left out). A search's model that exists only as captions races on the test split by looking
    them up (each image still counts as scored); on the validation split it has no captions and is
    left out.
    """
    from ..datasets.caption_fit import warn_if_misfit
    from ..datasets.generated import read_caption_texts, read_generated_captions
    from ..pipeline.sources import precomputed_candidates
    candidates, ids, notes = [], [], []
    precomputed = ({(c.architecture, c.run): c.captions for c in precomputed_candidates(run.config, data)}
                   if split == "test" and run.config.precomputed else {})
    for model in run.models:
        label = model_label(model.architecture, model.run, model.epoch)
        path = model.files.get("model")
        if path is not None:
            candidates.append(model_candidate(label, run.folder / path, data, run.config.generation, split))
        elif (model.architecture, model.run) in precomputed:
            candidates.append(Candidate(label, lookup(precomputed[(model.architecture, model.run)])))
        else:
            notes.append(f"{label}: captions given ready-made, none for the {split} split: left out")
            continue
        ids.append({"architecture": model.architecture, "run": model.run, "epoch": model.epoch, "source": model.source})
    for path in checkpoints:
        label = model_label("checkpoint", str(path), "")
        candidates.append(model_candidate(label, path, data, run.config.generation, split))
        ids.append({"architecture": "checkpoint", "run": str(path), "epoch": "", "source": "checkpoint"})
    split_data = data.dataset[split] if captions else None  # a split without caption files may not exist
    read = [read_generated_captions(path, split_data.image_ids, f"the {split} split", split_data.aliases)
            for path in captions]
    if read:
        warn_if_misfit(split_data.captions, read, [str(path) for path in captions])
    for path, found in zip(captions, read):
        if run.tokenizer == "ptb":  # PTB reads the file's own text, as evaluate does
            found = read_caption_texts(path, split_data.image_ids, f"the {split} split", split_data.aliases)
        candidates.append(Candidate(model_label("captions", str(path), ""), lookup(found)))
        ids.append({"architecture": "captions", "run": str(path), "epoch": "", "source": "captions"})
    return candidates, ids, notes


def _through_ptb(raw, candidates: list[Candidate]) -> tuple[list, list[Candidate]]:
    """(references[i][r] as PTB's tokens, the candidates with their captions through PTB too)."""
    from ..postgen.ptb import tokenize_captions
    tokens = iter(tokenize_captions([ref for refs in raw for ref in refs]))
    references = [[next(tokens).split() for _ in refs] for refs in raw]

    def through(generate):
        def generate_ptb(images):
            captions = [c if isinstance(c, str) else " ".join(c) for c in generate(images)]
            return [text.split() for text in tokenize_captions(captions)]
        return generate_ptb
    return references, [dataclasses.replace(c, generate=through(c.generate)) for c in candidates]


def run_select(run, metric: str, settings: RaceSettings, checkpoints=(), captions=(), progress: bool = True,
               exact: bool = False):
    """``pregen-search select``: a finished search's models (with ``checkpoints`` and models that exist
    only as ``captions``) on ``settings.split``: every model on every image where ``exact`` is asked
    and every model's captions are at hand (or the budget is 1), else raced.

    Returns (the select.tsv table, the ``Selection``, notes). On the test split the table also
    gives each model's whole-split score from the search (``search_score``) and the pick's regret,
    which checks the pick; those scores are never read by the race.
    """
    import pandas as pd

    from ..pipeline.sources import load_data
    check_metric(metric)  # before any work (and the only time: the race below trusts it)
    split = settings.split
    data = load_data(run.config, progress, run_folder=run.folder)
    candidates, ids, notes = search_candidates(run, data, split, checkpoints, captions)
    if not candidates:
        raise ValueError(f"{run.folder}: no model of the search can be decoded on the {split} split")
    # the run's stop words, jars...; never its backend: whole-split frequencies need the array CIDEr
    options = {k: v for k, v in dataclasses.asdict(run.config.postgen.options).items() if v and k != "backend"}
    references, tokenized = data.dataset[split].captions, False
    exact = exact and all(c.captions_at_hand() for c in candidates)  # before PTB wraps them
    if run.tokenizer == "ptb":  # the search's own: raw references and the models' captions through PTB
        (references, candidates), tokenized = _through_ptb(data.dataset[split].raw_text(), candidates), True
    selection = race_candidates(candidates, references, metric, settings, options, tokenized=tokenized, exact=exact)
    race = selection.race.table.drop(columns=["candidate"])
    table = pd.concat([pd.DataFrame(ids), race], axis=1)
    if split == "test" and metric in run.postgen:
        whole = run.models_table
        whole = {(str(r.architecture), str(r.run), str(r.epoch)): getattr(r, metric) for r in whole.itertuples()}
        table["search_score"] = [whole.get((str(a), str(r), str(e)), math.nan)
                                 for a, r, e in zip(table["architecture"], table["run"], table["epoch"])]
    table["whole_split_score"] = selection.whole_split_scores()  # NaN where the race scored a subset
    if selection.paired is not None:
        table = pd.concat([table, selection.paired.drop(columns=["better"])], axis=1)
    table["metric"] = metric
    table["assist"] = settings.assist
    for key, value in selection.race.assist.items():  # the race's own: how many were screened out
        table[f"race_{key}"] = value
    table["split"] = split
    table["tokenizer"] = run.tokenizer
    table["signature"] = race_signature(metric, run.tokenizer, references)
    return table, selection, notes
