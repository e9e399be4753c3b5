"""Where a search's data and models come from: the built-in dataset or a user corpus, and
models trained here, read from checkpoints, or evaluated elsewhere (precomputed outputs).

Everything a source reads is checked before anything is trained or written, so bad input
fails at once with one line; every model gets a key that identifies it for the stage cache.
"""
from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np

from .. import io
from ..captioning import TrainedModel, load_trained, train_captioner
from ..datasets import (
    CaptionDataset,
    CaptionVocabulary,
    ShapesConfig,
    Vocabulary,
    load_shapes,
    load_vocabulary,
    read_features,
    read_flickr8k,
    read_karpathy_json,
)
from ..datasets.generated import read_generated_captions
from ..datasets.tokenizer import run_bpe, train_bpe
from ..refprobs import RefProbs
from ..strata import NUM_SPEC_STRATA
from .cache import Entry, Stage, StageCache, digest
from .config import MIN_TEST_IMAGES, SearchConfig, model_label

TRAIN = Stage("train", 2)  # 2: pre centres its image features and never drops them


@dataclasses.dataclass
class SearchModel:
    """One model to evaluate: a Flax model (``trained``) or precomputed outputs.

    ``key`` identifies the model's parameters (or outputs) for the stage cache.
    """

    architecture: str
    run: str
    epoch: str
    key: str
    trained: TrainedModel | None = None
    ref_probs: RefProbs | None = None
    captions: list[list[str]] | None = None

    @property
    def label(self) -> str:
        return model_label(self.architecture, self.run, self.epoch)


@dataclasses.dataclass
class Data:
    """A search's corpus, vocabulary and the content keys of its splits."""

    dataset: CaptionDataset
    vocab: CaptionVocabulary
    facts: dict

    @property
    def test(self):
        return self.dataset["test"]

    @property
    def references(self):
        """The test references' fingerprint (``refprobs.ReferenceFingerprint``) with this vocabulary."""
        from ..refprobs import reference_fingerprint
        return reference_fingerprint(self.test.captions, self.vocab)

    @property
    def features_id(self) -> str:
        """The identity of the image features: the built-in encoder's checkpoint name, or the feature file."""
        return Path(self.facts["encoder"]).name if "encoder" in self.facts else str(self.facts.get("features", ""))

    def split_key(self, split: str, features: bool = True) -> str:
        """Content hash of a split's image ids and references (and features, if asked)."""
        data = self.dataset[split]
        parts = [data.image_ids, data.captions]
        if features and data.features is not None:
            parts.append(hashlib.sha256(np.ascontiguousarray(data.features).tobytes()).hexdigest())
        return digest(*parts)


def load_data(config: SearchConfig, progress: bool, run_folder=None) -> Data:
    """The dataset with features on every split, its vocabulary, and facts for the report.

    ``run_folder``: the search's output folder, where a BPE vocabulary is kept (``build_vocabulary``).
    """
    from ..datasets.shapes_encoder import attach_image_features
    data = config.data
    if data.source == "shapes":
        dataset = load_shapes(ShapesConfig(data.train, data.val, data.test, seed=data.seed))
        info = attach_image_features(dataset, io.default_cache_dir(), epochs=data.encoder_epochs, seed=config.seed,
                                     progress=progress)
        facts = {"dataset": f"built-in shapes v1 (seed {data.seed}, {data.train}/{data.val}/{data.test})", **info}
    else:
        dataset = read_karpathy_json(data.karpathy_json) if data.source == "karpathy" else read_flickr8k(
            data.flickr8k_dir)
        facts = {"dataset": f"{dataset.name} ({data.source})", "features": data.features or "none"}
        if "test" not in dataset.splits:
            raise ValueError(f"{data.karpathy_json or data.flickr8k_dir}: the corpus has no test split")
        if data.features:
            for split in dataset.splits.values():
                split.features = read_features(data.features, split.image_ids, dataset.file_order)
    test = dataset["test"]
    test.check(f"{facts['dataset']} test split")
    if len(test) < MIN_TEST_IMAGES:
        raise ValueError(f"{facts['dataset']}: the test split has {len(test)} images; the "
                         f"{NUM_SPEC_STRATA} strata need at least {MIN_TEST_IMAGES}")
    vocab = build_vocabulary(config, dataset, run_folder)
    facts.update(vocabulary=len(vocab), vocabulary_name=vocab.name, test_images=len(test))
    return Data(dataset, vocab, facts)


def build_vocabulary(config: SearchConfig, dataset: CaptionDataset, run_folder=None) -> CaptionVocabulary:
    """The models' vocabulary: ``[models] vocabulary`` when given, else built from the train
    captions (the test captions when there is no train split: then it is only reported).

    A BPE (``[data] tokenizer = "bpe"``) is trained once per run folder: saved in
    ``<run_folder>/cache/tokenizer/`` under a name keyed on its training captions and size, and
    read back from there by every later search and process (without ``run_folder``, trained
    in memory).
    """
    data = config.data
    if config.models.vocabulary:
        vocab = load_vocabulary(config.models.vocabulary)
        if vocab.kind != data.tokenizer:
            raise ValueError(f"{config.models.vocabulary}: a {vocab.kind} vocabulary ({vocab.name}), but [data] "
                             f"tokenizer = {data.tokenizer!r}")
        return vocab
    captions = dataset["train" if "train" in dataset.splits else "test"].captions
    if data.tokenizer == "word":
        return Vocabulary.build(captions, data.min_count)
    if run_folder is None:
        return train_bpe(captions, data.vocab_size)
    name = f"bpe-{data.vocab_size}-{digest(captions)}.json"
    return run_bpe(captions, data.vocab_size, Path(run_folder) / "cache" / "tokenizer" / name)


def precomputed_candidates(config: SearchConfig, data: Data) -> list[SearchModel]:
    """Models evaluated by other toolkits: RefProbs .npz + a caption file each (``datasets.generated``),
    checked against the corpus."""
    test = data.test
    candidates = []
    for entry in config.precomputed:
        where = f"[[precomputed]] {entry.label} ({entry.ref_probs})"
        ref_probs = RefProbs.load(entry.ref_probs)
        ref_probs.check_references(test.captions, test.image_ids, where)
        if ref_probs.references is not None and ref_probs.references.tokens != data.references.tokens:
            raise ValueError(f"{where}: its fingerprint says it was computed on other references "
                             f"({ref_probs.references.tokens}, the test split's are {data.references.tokens})")
        captions = read_generated_captions(entry.captions, test.image_ids, aliases=test.aliases)  # JSONL, TSV or a caption a line
        key = digest("precomputed", io.file_digest(entry.ref_probs), io.file_digest(entry.captions))
        candidates.append(SearchModel(entry.architecture, entry.run, "final", key, ref_probs=ref_probs,
                                    captions=captions))
    return candidates


def checkpoint_candidates(config: SearchConfig, data: Data) -> list[SearchModel]:
    """Models trained earlier (``[models] checkpoints``), checked against the vocabulary and features."""
    candidates = []
    for path in config.models.checkpoints:
        trained = load_trained(path, data.vocab)
        _check_feature_size(trained, data, path)
        candidates.append(SearchModel(trained.model.arch, Path(path).parent.name, "final",
                                    digest("checkpoint", io.file_digest(path)), trained))
    return candidates


def _check_feature_size(trained: TrainedModel, data: Data, path) -> None:
    kernel = trained.params["params"]["image_proj"]["kernel"]
    have = data.test.features.shape[1]
    if kernel.shape[0] != have:
        raise ValueError(f"{path}: the model reads {kernel.shape[0]}-dimensional image features, the corpus's "
                         f"features have {have}")


def train_settings(config: SearchConfig, arch: str, run: int) -> dict:
    """Everything that determines a trained model, besides the data."""
    # "captioner": the key the architecture's sizes had when one section held every family's (caches stay valid)
    return {"arch": arch, "captioner": config.models.sizes(arch).record(), "training": config.training.record(),
            "seed": config.seed * 1000 + run}


@dataclasses.dataclass
class TrainingJob:
    """One architecture x run to train (or resume, or reuse) in the stage cache: a unit of work
    that one process does, giving the final model and its snapshots as candidates."""

    architecture: str
    run: int
    settings: dict
    entry: Entry

    @property
    def label(self) -> str:
        return model_label(self.architecture, self.run)

    def train(self, config: SearchConfig, data: Data, progress: bool, stop=None) -> list[SearchModel]:
        """Train the model (or finish or reuse its training) and return its candidates with parameters
        (``stop``: an event that ends the training early, see ``train_captioner``)."""
        train, val = data.dataset["train"], data.dataset["val"]
        trained = train_captioner(self.architecture, config.models.sizes(self.architecture), config.training,
                                  self.settings["seed"],
                                  data.vocab, train.features, train.captions, val.features, val.captions,
                                  self.entry.folder, progress=progress, description=self.label, stop=stop)
        if not self.entry.done:
            self.entry.mark_done()
        return self.candidates(config, data, trained)

    def candidates(self, config: SearchConfig, data: Data, trained: TrainedModel | None = None) -> list[SearchModel]:
        """The final model, then each snapshot that exists (early stopping may end training before
        a snapshot epoch). Without ``trained``, no parameters are read: the candidates only name
        cache entries that another process computed."""
        if not self.entry.done:
            raise ValueError(f"{self.entry.folder}: the training of {self.label} did not finish (a process "
                             "stopped early?); rerun the same command to resume")
        candidates = [SearchModel(self.architecture, str(self.run), "final", f"{self.entry.key}:final", trained)]
        for epoch in config.training.snapshot_epochs:
            snapshot = self.entry.folder / f"snapshot-epoch{epoch}.msgpack"
            if snapshot.is_file():
                candidates.append(SearchModel(self.architecture, str(self.run), str(epoch), f"{self.entry.key}:epoch{epoch}",
                                            load_trained(snapshot, data.vocab) if trained is not None else None))
        return candidates


def training_jobs(config: SearchConfig, data: Data, cache: StageCache) -> list[TrainingJob]:
    """Every architecture x run, in the order of the search's table."""
    upstream = (data.split_key("train"), data.split_key("val"), data.vocab.fingerprint())
    jobs = []
    for arch in config.models.architectures:
        for run in range(1, config.models.runs + 1):
            settings = train_settings(config, arch, run)
            jobs.append(TrainingJob(arch, run, settings, cache.entry(TRAIN, model_label(arch, run), settings, upstream)))
    return jobs
