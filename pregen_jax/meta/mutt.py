"""MUTT metric unit tests (Boag, Campos, Saenko, Rumshisky 2016): does a post-gen metric score an
original sentence above its corruption, or (meaning-preserving corruptions) within 15% of it?

A test set (the layout of ``../shared/data/mutt/``): ``<corruption>_a.json`` and
``<corruption>_b.json``, ``[{"image_id", "caption"}]`` aligned by image_id (originals and their
corruptions), and ``<corruption>_r<k>.json``, COCO-style annotation files with k references per
image_id. A trial is one (a, b) pair scored against the first k references of its item.
"""
from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io
from ..datasets import TOKENIZER_NAME, tokenize
from .common import score_candidates

MEANING_ALTERING, MEANING_PRESERVING, FLUENCY = "meaning-altering", "meaning-preserving", "fluency"
KINDS = {"neg_subj": MEANING_ALTERING, "neg_verb": MEANING_ALTERING, "sem_opps": MEANING_ALTERING,
         "shuffled": MEANING_ALTERING, "passive": MEANING_PRESERVING, "near_syms": MEANING_PRESERVING,
         "det_sub": MEANING_PRESERVING, "double_PP": FLUENCY, "remove_prep": FLUENCY, "swap_chunks": FLUENCY}
TOLERANCE = 0.15  # MUTT's "Difference formula": |s_a - s_b| / (s_a + eps) <= 0.15
EPSILON = 1e-9
DEFAULT_KS = (5, 10, 20)
COLUMNS = ("corruption", "kind", "metric", "refs", "trials", "passed", "accuracy", "tokenizer")


def passes(kind: str, s_a, s_b) -> np.ndarray:
    """bool[trials]: whether each trial passes, given the scores of the originals and the corruptions.

    Meaning-altering and fluency corruptions pass when the original scores strictly higher (a
    tie fails); meaning-preserving ones when the corruption is within 15% of the original (so two
    zeros pass).
    """
    s_a, s_b = np.asarray(s_a, float), np.asarray(s_b, float)
    if kind == MEANING_PRESERVING:
        return np.abs(s_a - s_b) / (s_a + EPSILON) <= TOLERANCE
    if kind in (MEANING_ALTERING, FLUENCY):
        return s_a > s_b
    raise ValueError(f"unknown corruption kind {kind!r}; choose from {sorted(set(KINDS.values()))}")


@dataclasses.dataclass(frozen=True)
class MuttSet:
    """One corruption's trials, tokenised (tokens joined by spaces).

    Attributes:
      originals, corruptions: str[items], aligned by ``image_ids``.
      references: k -> references[item] (the first k of the item's list, empty ones left out).
      dropped: k -> how many references were empty after tokenisation and left out.
      prefix_consistent: whether every smaller k's list is the start of the largest k's list
        (None with one k).
    """

    corruption: str
    kind: str
    image_ids: list
    originals: list[str]
    corruptions: list[str]
    references: dict[int, list[list[str]]]
    dropped: dict[int, int]
    prefix_consistent: bool | None


def parse_ks(spec) -> tuple[int, ...]:
    """``"5,10,20"`` -> (5, 10, 20)."""
    if not isinstance(spec, str):
        return tuple(int(k) for k in spec)
    try:
        ks = tuple(int(k) for k in spec.split(",") if k.strip())
    except ValueError:
        raise ValueError(f"--refs: expected comma-separated numbers of references like 5,10,20, got {spec!r}") from None
    if not ks or min(ks) < 1:
        raise ValueError(f"--refs: expected positive numbers of references like 5,10,20, got {spec!r}")
    return tuple(dict.fromkeys(ks))


def _load_json(path: Path, what: str):
    if not path.is_file():
        raise ValueError(f"{path}: not found ({what})")
    try:
        return json.loads(io.read_text(path, what))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err.msg}, line {err.lineno})") from None


def _entries(path: Path, data, what: str) -> list[tuple]:
    """(image_id, caption) of a list of {"image_id", "caption"} objects."""
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of {{'image_id', 'caption'}} objects ({what})")
    out = []
    for n, entry in enumerate(data):
        if not isinstance(entry, dict) or "image_id" not in entry or not isinstance(entry.get("caption"), str):
            raise ValueError(f"{path}: entry {n} is not an object with 'image_id' and a string 'caption'")
        image_id = entry["image_id"]
        if isinstance(image_id, bool) or not isinstance(image_id, (int, str)):
            raise ValueError(f"{path}: entry {n}: image_id = {json.dumps(image_id)[:60]}: must be a number or a "
                             "string")
        out.append((image_id, entry["caption"]))
    return out


def read_sentences(path) -> tuple[list, list[str]]:
    """The image_ids and tokenised captions of a ``<corruption>_a.json`` / ``_b.json`` file."""
    path = Path(path)
    entries = _entries(path, _load_json(path, "sentences"), "sentences")
    if not entries:
        raise ValueError(f"{path}: no sentences")
    ids = [i for i, _ in entries]
    if len(set(map(repr, ids))) != len(ids):
        raise ValueError(f"{path}: an image_id appears more than once")
    sentences = []
    for image_id, caption in entries:
        tokens = tokenize(caption)
        if not tokens:
            raise ValueError(f"{path}: image_id {image_id}: caption {caption!r} is empty after tokenisation "
                             f"({TOKENIZER_NAME})")
        sentences.append(" ".join(tokens))
    return ids, sentences


def read_reference_lists(path) -> dict:
    """image_id -> raw reference captions in file order, from a COCO-style annotation file."""
    path = Path(path)
    data = _load_json(path, "references")
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise ValueError(f"{path}: expected a COCO-style annotation file (an object with an 'annotations' list)")
    lists: dict = {}
    for image_id, caption in _entries(path, data["annotations"], "references"):
        lists.setdefault(image_id, []).append(caption)
    return lists


def _references(path: Path, lists: dict, image_ids: list, k: int) -> tuple[list[list[str]], int]:
    """The first k references of each item, tokenised; empty ones left out (and counted)."""
    out, dropped = [], 0
    for image_id in image_ids:
        raw = lists.get(image_id, [])
        if 0 < len(raw) < k:
            raise ValueError(f"{path}: image_id {image_id} has {len(raw)} references, fewer than {k}")
        refs = [" ".join(tokenize(r)) for r in raw[:k]]
        kept = [r for r in refs if r]
        dropped += len(refs) - len(kept)
        if not kept:
            raise ValueError(f"{path}: image_id {image_id} has no references"
                             + (" (all empty after tokenisation)" if refs else ""))
        out.append(kept)
    return out, dropped


def read_mutt_set(folder, corruption: str, ks=DEFAULT_KS) -> MuttSet:
    """Read and check one corruption's sentences and references."""
    folder = Path(folder)
    if corruption not in KINDS:
        raise ValueError(f"{folder / (corruption + '_a.json')}: unknown corruption {corruption!r}; "
                         f"known: {list(KINDS)}")
    a_path, b_path = folder / f"{corruption}_a.json", folder / f"{corruption}_b.json"
    ids, originals = read_sentences(a_path)
    ids_b, corruptions = read_sentences(b_path)
    if ids_b != ids:
        if len(ids_b) != len(ids):
            raise ValueError(f"{b_path}: {len(ids_b)} sentences but {a_path.name} has {len(ids)}")
        n = next(n for n, (x, y) in enumerate(zip(ids, ids_b)) if x != y)
        raise ValueError(f"{b_path}: image_ids do not align with {a_path.name} "
                         f"(entry {n}: image_id {ids_b[n]!r}, {a_path.name} has {ids[n]!r})")
    references, dropped, lists = {}, {}, {}
    for k in ks:
        path = folder / f"{corruption}_r{k}.json"
        if not path.is_file():
            raise ValueError(f"{path}: not found (no {k}-reference set for {corruption}; --refs asks for k={k})")
        lists[k] = read_reference_lists(path)
        references[k], dropped[k] = _references(path, lists[k], ids, k)
    prefix = None
    if len(ks) > 1:
        top = max(ks)
        prefix = all(lists[k].get(i, []) == lists[top].get(i, [])[:k] for k in ks for i in ids)
    return MuttSet(corruption, KINDS[corruption], ids, originals, corruptions, references, dropped, prefix)


def find_corruptions(folder) -> list[str]:
    """The corruptions with a ``<corruption>_a.json`` in ``folder``, in MUTT's order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"{folder}: MUTT folder not found")
    found = sorted(p.name[:-len("_a.json")] for p in folder.glob("*_a.json"))
    if not found:
        raise ValueError(f"{folder}: no <corruption>_a.json files (expected the layout of ../shared/data/mutt)")
    unknown = [c for c in found if c not in KINDS]
    if unknown:
        raise ValueError(f"{folder / (unknown[0] + '_a.json')}: unknown corruption {unknown[0]!r}; "
                         f"known: {list(KINDS)}")
    return [c for c in KINDS if c in found]


def read_mutt(folder, ks=DEFAULT_KS) -> list[MuttSet]:
    """Every corruption in ``folder``, read and checked before any metric runs."""
    return [read_mutt_set(folder, c, ks) for c in find_corruptions(folder)]


def score_mutt(sets: list[MuttSet], metric_set, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """One row per (corruption, metric, k): trials, passed, accuracy (percent).

    As MUTT did, the originals and the corruptions are scored in two separate calls of each
    metric against the same references (so CIDEr's document frequencies come from that set's
    references), and a trial compares the per-sentence scores.
    """
    rows = []
    for mutt_set in sets:
        start = time.perf_counter()
        for k, refs in mutt_set.references.items():
            s_a = score_candidates(metric_set, refs, mutt_set.originals)
            s_b = score_candidates(metric_set, refs, mutt_set.corruptions)
            for name in metric_set.names:
                ok = passes(mutt_set.kind, s_a[name], s_b[name])
                rows.append({"corruption": mutt_set.corruption, "kind": mutt_set.kind, "metric": name, "refs": k,
                             "trials": len(ok), "passed": int(ok.sum()), "accuracy": 100.0 * float(ok.mean()),
                             "tokenizer": TOKENIZER_NAME})
        if progress:
            progress(f"{mutt_set.corruption}: {len(mutt_set.originals)} trials x {len(mutt_set.references)} "
                     f"reference sets ({time.perf_counter() - start:.0f} s)")
    return pd.DataFrame(rows, columns=list(COLUMNS))
