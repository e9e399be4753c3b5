"""``evaluate``'s diversity metrics (``postgen.DIVERSITY``: Div_1, Div_2, gDiv_1, mBLEU_1..4,
Self_CIDEr) of results files with several captions (samples) per image: which metrics a file's
shape allows, the metrics made for a run, and their signatures.

COCO's metrics score one caption per image against the references, so a file with samples is
scored by the diversity metrics only (one line says so, before any work); mBLEU and Self-CIDEr
need two samples or more. Self-CIDEr takes its document frequencies from every image of the
references file, as ``eval_self_cider`` does.
"""
from __future__ import annotations

from .. import postgen
from ..postgen.signature import signature
from .inputs import ResultsFile


def check_shapes(requested: list[str], systems: list[ResultsFile]) -> None:
    """ValueError (one line) where a metric cannot score the systems' captions as given: a COCO metric
    on a file with several captions per image, or a diversity metric on fewer samples than it needs."""
    several = next((s for s in systems if s.per_image > 1), None)
    scored = [name for name in requested if name not in postgen.DIVERSITY]
    if several is not None and scored:
        raise ValueError(f"--metrics {scored[0]}: scores one caption per image against the references, and "
                         f"{several.path} has {several.per_image} per image (with samples, ask for the diversity "
                         f"metrics: {', '.join(postgen.DIVERSITY)})")
    for name in requested:
        if name in postgen.DIVERSITY:
            least = postgen.diversity_metric(name).least
            few = next((s for s in systems if s.per_image < least), None)
            if few is not None:
                raise ValueError(f"--metrics {name}: needs at least {least} captions (samples) per image, and "
                                 f"{few.path} has {few.per_image}")


def wants_every_image(requested: list[str]) -> bool:
    """Whether a requested metric reads the references of every image of REFS (Self-CIDEr's document
    frequencies)."""
    return "Self_CIDEr" in requested


def diversity_metrics(requested: list[str], every_gts: dict | None, train: tuple | None = None) -> dict:
    """name -> the diversity metric, for the requested ones; Self-CIDEr with ``every_gts`` (image -> tokenized
    references of every image of REFS) as its document set; ``novel`` with ``train`` (the training
    file's name and its tokenized captions, ``training_captions``)."""
    made = {}
    for name in requested:
        if name in postgen.DIVERSITY:
            metric = postgen.diversity_metric(name)
            if name == "Self_CIDEr":
                metric.idf_from = every_gts
            if name == "novel" and train is not None:
                metric.source, metric.train = train[0], frozenset(train[1])
            made[name] = metric
    return made


def read_training(requested: list[str], train_captions, split: str = "train"):
    """The training captions ``novel`` compares with: (the file's name, its raw captions), read (and
    checked) before any work; None where ``novel`` is not asked for. ``train_captions``: a COCO annotation
    file (all its captions), a Karpathy-split JSON (its ``split``, default train) or an
    ``export-references`` JSONL."""
    from pathlib import Path

    from ..captionfiles import read_references
    if "novel" not in requested:
        return None
    if train_captions is None:
        raise ValueError("--metrics novel: needs the training captions (--train-captions FILE)")
    found = read_references(train_captions, split)
    return Path(str(train_captions)).name, [c for refs in found.captions.values() for c in refs]


def document_frequencies(line: str, metrics: list[str]) -> str:
    """settings.json's ``document_frequencies`` (CIDEr-D's rule, ``line``) with Self-CIDEr's where it ran,
    CIDEr-D's only where it ran."""
    if "Self_CIDEr" not in metrics:
        return line
    own = "Self-CIDEr: from the references of every image of REFS (eval_self_cider)"
    return f"{line}; {own}" if "CIDEr" in metrics else own


def samples_label(systems: list[ResultsFile]) -> str:
    """Samples per image over the systems: ``5``, or ``3-12`` where they differ."""
    counts = [s.per_image for s in systems]
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}-{high}"


def diversity_signature(name: str, metric, *, tokenizer: str, nrefs: str, samples: str) -> str:
    """The signature of a diversity metric: its variant (n, the definition, the set: samples per image;
    Self-CIDEr's document frequencies: ``df:all``, every image of REFS, with its references per image)."""
    return signature(name, tokenizer=tokenizer, nrefs=nrefs if name == "Self_CIDEr" else None,
                     variant=metric.variant(samples))
