"""Getting the data and the models a search evaluates: built-in, user corpora, checkpoints, precomputed."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from .. import training
from ..datasets import (CaptionDataset, ShapesConfig, Vocabulary, load_shapes, read_features, read_flickr8k,
                        read_karpathy_json, tokenize)
from ..datasets.shapes import default_cache_dir
from ..image_features import attach_image_features
from ..types import RefProbs
from .config import SearchConfig


@dataclasses.dataclass
class Candidate:
    """One model to evaluate: either a trained Flax model or precomputed outputs."""

    architecture: str
    run: str
    epoch: str
    trained: training.TrainedModel | None = None
    ref_probs: RefProbs | None = None
    captions: list[list[str]] | None = None

    @property
    def label(self) -> str:
        return f"{self.architecture}-{self.run}" + (f"-e{self.epoch}" if self.epoch else "")


def load_data(config: SearchConfig, progress: bool) -> tuple[CaptionDataset, dict]:
    """The dataset with features on every split, and facts for the report."""
    data = config.data
    if data.source == "shapes":
        dataset = load_shapes(ShapesConfig(data.train, data.val, data.test, seed=data.seed))
        info = attach_image_features(dataset, default_cache_dir(), epochs=data.encoder_epochs, seed=config.seed,
                                     progress=progress)
        return dataset, {"dataset": f"built-in shapes v1 (seed {data.seed}, {data.train}/{data.val}/{data.test})",
                         **info}
    if data.source == "karpathy":
        dataset = read_karpathy_json(data.karpathy_json)
    else:
        dataset = read_flickr8k(data.flickr8k_dir)
    if data.features:
        for split in dataset.splits.values():
            split.features = read_features(data.features, split.image_ids, dataset.file_order)
    return dataset, {"dataset": f"{dataset.name} ({data.source})", "features": data.features}


def vocabulary(config: SearchConfig, dataset: CaptionDataset) -> Vocabulary:
    if config.models.vocabulary:
        return Vocabulary.load(config.models.vocabulary)
    return Vocabulary.build(dataset["train"].captions, config.data.min_count)


def trained_candidates(config: SearchConfig, dataset: CaptionDataset, vocab: Vocabulary, out: Path,
                       progress: bool) -> list[Candidate]:
    """Train (or resume, or load) every architecture x run; snapshots become extra candidates."""
    candidates = []
    train, val = dataset["train"], dataset["val"]
    for arch in config.models.architectures:
        for run in range(1, config.models.runs + 1):
            seed = config.seed * 1000 + run
            workdir = out / "models" / f"{arch}-{run}"
            trained = training.train_captioner(config.models.captioner(arch), config.training.train_config(seed),
                                               vocab, train.features, train.captions, val.features, val.captions,
                                               workdir, progress=progress, description=f"{arch}-{run}")
            candidates.append(Candidate(arch, str(run), "", trained))
            for epoch in config.training.snapshot_epochs:
                snapshot = workdir / f"snapshot-epoch{epoch}.msgpack"
                if snapshot.is_file():
                    candidates.append(Candidate(arch, str(run), str(epoch), training.load_trained(snapshot, vocab)))
    return candidates


def checkpoint_candidates(config: SearchConfig, vocab: Vocabulary) -> list[Candidate]:
    candidates = []
    for path in config.models.checkpoints:
        trained = training.load_trained(path, vocab)
        candidates.append(Candidate(trained.model.config.arch, Path(path).parent.name, "", trained))
    return candidates


def precomputed_candidates(config: SearchConfig, num_test_images: int) -> list[Candidate]:
    """Models evaluated by other toolkits: RefProbs .npz + a caption file per model."""
    candidates = []
    for entry in config.precomputed:
        ref_probs = RefProbs.load(entry.ref_probs)
        if ref_probs.num_images != num_test_images:
            raise ValueError(f"{entry.ref_probs}: {ref_probs.num_images} images but the test split has "
                             f"{num_test_images}")
        path = Path(entry.captions)
        if not path.is_file():
            raise ValueError(f"{path}: caption file not found")
        lines = path.read_text(encoding="utf-8").splitlines()
        if len(lines) != num_test_images:
            raise ValueError(f"{path}: {len(lines)} captions but the test split has {num_test_images} images "
                             "(one caption a line, in test-split order)")
        captions = [tokenize(line) for line in lines]
        empty = [n for n, c in enumerate(captions) if not c]
        if empty:
            raise ValueError(f"{path}: line {empty[0] + 1} is an empty caption (zero tokens after tokenisation)")
        candidates.append(Candidate(entry.architecture, entry.run, "", ref_probs=ref_probs, captions=captions))
    return candidates
