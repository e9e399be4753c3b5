"""Train the grids and score every checkpoint, each result cached in the run folder.

Validation scores of a checkpoint (``score_checkpoint``): the 504 pre-gen metrics and the
per-token perplexity from one teacher-forced pass; beam-3 captions scored by CIDEr (corpus
and per image) and METEOR; CIDEr of beam-3 captions of a fixed random 10% of the images;
and the wall time of every step, measured after a warm-up so that compilation is not billed
to any criterion. Search scores of a model (``score_search_model``): the 15 strata of its
test split by per-image CIDEr, CIDEr and the 504 pre-gen metrics on each, by the search's flow.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import cheap_features as features  # beside this file
import numpy as np

from pregen_jax import io, postgen, tiers
from pregen_jax.captioning import (
    RnnConfig,
    TrainConfig,
    TransformerConfig,
    criteria,
    generate_captions,
    load_trained,
    perplexity,
    reference_probs,
    train_captioner,
)
from pregen_jax.captioning.input_pipeline import reference_word_starts
from pregen_jax.datasets import CaptionDataset
from pregen_jax.pipeline.config import GenerationConfig, PostgenConfig, SearchConfig
from pregen_jax.pipeline.flow import FlowSettings, score_model
from pregen_jax.pipeline.postgen_metrics import LazyMetrics
from pregen_jax.pipeline.sources import Data, SearchModel

WINNER_2018 = "mean_max_normcount_prefix0"
TIMES = ("refprobs", "sweep_one", "sweep_all", "generate", "cider", "meteor", "generate_subset", "cider_subset",
         "sweep_images")


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One training run of a grid."""

    arch: str
    size: int            # embedding, hidden and image sizes
    learning_rate: float
    dropout: float
    seed: int
    epochs: int
    batch_size: int = 128
    layers: int = 0      # transformer only: decoder blocks and attention heads (0: the RNNs)
    heads: int = 0

    @property
    def label(self) -> str:
        shape = f"-L{self.layers}H{self.heads}" if self.layers else ""
        return f"{self.arch}-h{self.size}{shape}-lr{self.learning_rate:g}-d{self.dropout:g}-s{self.seed}"

    def model_config(self) -> RnnConfig | TransformerConfig:
        """Width = embedding = image size; a transformer's feed-forward width is 2x its width."""
        if not self.layers:
            return RnnConfig(embed_size=self.size, hidden_size=self.size, image_size=self.size, dropout=self.dropout)
        return TransformerConfig(width=self.size, mlp_width=2 * self.size, image_size=self.size,
                                 dropout=self.dropout, layers=self.layers, heads=self.heads)

    def train(self, corpus, folder: Path, progress: bool):
        config = TrainConfig(epochs=self.epochs, batch_size=self.batch_size, learning_rate=self.learning_rate,
                             patience=self.epochs, snapshot_epochs=list(range(1, self.epochs + 1)))
        model_config = self.model_config()
        return train_captioner(self.arch, model_config, config, self.seed, corpus.vocab, corpus.train.features,
                               corpus.train.captions, corpus.val.features, corpus.val.captions,
                               folder / "train" / self.label, progress=progress, description=self.label)

    def snapshot(self, folder: Path, epoch: int) -> Path:
        return folder / "train" / self.label / f"snapshot-epoch{epoch}.msgpack"


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    value = fn(*args, **kwargs)
    return value, time.perf_counter() - start


def references(split, rows=None) -> dict:
    rows = range(len(split)) if rows is None else rows
    return {split.image_ids[n]: [" ".join(ref) for ref in split.captions[n]] for n in rows}


def candidates(split, captions, rows=None) -> dict:
    rows = range(len(split)) if rows is None else rows
    return {split.image_ids[n]: [" ".join(caption)] for n, caption in zip(rows, captions)}


def _save_npz(path: Path, **arrays) -> None:
    with io.atomic_path(path) as tmp:
        np.savez(tmp, **arrays)


def _load_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def word_level(ref_probs, split, vocab):
    """The pre-gen metrics' positions are words: a subword model's pieces are joined (``pieces``)."""
    if ref_probs.units == "word":
        return ref_probs
    return ref_probs.to_words(reference_word_starts(split.captions, vocab))


class Scorer:
    """Scores checkpoints on one corpus's validation split (METEOR in one process, when asked for)."""

    def __init__(self, corpus, metrics, subset: np.ndarray):
        by_name = {m.name: m for m in metrics.metrics}
        self.corpus = corpus
        self.cider, self.meteor = by_name["CIDEr"], by_name.get("METEOR")
        self.subset = np.asarray(subset)
        self._warm: set = set()

    def _evaluate(self, trained) -> tuple[dict, dict]:
        model, params, val, vocab = trained.model, trained.params, self.corpus.val, self.corpus.vocab
        times = {}
        ref_probs, times["refprobs"] = timed(reference_probs, model, params, val.features, val.captions, vocab,
                                             progress=False, source="validation", warn_unknown=False)
        words, seconds = timed(word_level, ref_probs, val, vocab)
        times["refprobs"] += seconds
        _, times["sweep_one"] = timed(criteria.pregen_values, words, [WINNER_2018])
        pregen, times["sweep_all"] = timed(tiers.sweep, words)
        # per-image cheap features (issue 29): the tier space with each image its own stratum
        (image_space, _), times["sweep_images"] = timed(features.image_tier_space, words)
        captions, times["generate"] = timed(generate_captions, model, params, val.features, vocab, beam_width=3,
                                            progress=False)
        gts, res = references(val), candidates(val, captions)
        # per image over the whole split: each image's score with whole-set document frequencies
        (cider, per_image), times["cider"] = timed(self.cider.compute_score, gts, res)
        meteor, times["meteor"] = float("nan"), 0.0
        if self.meteor is not None:
            (meteor, _), times["meteor"] = timed(self.meteor.compute_score, gts, res)
        rows = self.subset
        sub_captions, times["generate_subset"] = timed(generate_captions, model, params, val.features[rows], vocab,
                                                       beam_width=3, batch_size=len(rows), progress=False)
        (cider_subset, _), times["cider_subset"] = timed(postgen.score, "CIDEr", references(val, rows),
                                                         candidates(val, sub_captions, rows), idf_from=gts,
                                                         tokenizer="alnum-lower")  # the dataset's own tokens
        scores = {"pregen": np.asarray(pregen[0], np.float64), "perplexity": perplexity(ref_probs),
                  "cider": cider, "cider_per_image": np.asarray(per_image, np.float64), "meteor": meteor,
                  "cider_subset": cider_subset, "mean_caption_length": np.mean([len(c) for c in captions]),
                  "image_log_perplexity": features.image_log_perplexity(ref_probs), "image_space": image_space}
        return scores, times

    def score(self, trained, path: Path) -> dict:
        """The checkpoint's validation scores and timings, from ``path`` when cached there."""
        if path.is_file():
            cached = _load_npz(path)
            if "image_space" in cached and len(cached["times"]) == len(TIMES):
                return cached  # a cache from before the per-image features is scored again
        key = (trained.model.arch, trained.model.config, trained.model.vocab_size)
        if key not in self._warm:  # compile every shape once, untimed
            self._evaluate(trained)
            self._warm.add(key)
        scores, times = self._evaluate(trained)
        _save_npz(path, **scores, times=np.array([times[k] for k in TIMES]))
        return _load_npz(path)


def score_search_model(trained, split, vocab, cider_metric, path: Path) -> dict:
    """A search's rows for one model on ``split``, through the search's own flow (``pipeline.flow``):
    15 strata by per-image CIDEr of beam-3 captions, CIDEr recomputed on each stratum, the 504
    pre-gen metrics on each (cached at ``path``). ``cider_metric``: a running CIDEr to reuse."""
    if path.is_file():
        return _load_npz(path)
    data = Data(CaptionDataset("search", {"test": split}), vocab, {})
    metrics = LazyMetrics(PostgenConfig(metrics=["CIDEr"], tokenizer="alnum-lower"), data, started={"CIDEr": cider_metric})
    settings = FlowSettings(SearchConfig(generation=GenerationConfig(beam_width=3)), metrics, tiers.DEFAULT_SPACE,
                            progress=False, warn_unknown=False)
    model = score_model(SearchModel(trained.model.arch, "search", "final", "search model", trained), data, settings)
    strata = model.values["strata"]
    _save_npz(path, pregen=np.asarray(model.values["pregen"], np.float64),
              cider=np.asarray(model.post["CIDEr"], np.float64), per_image=np.asarray(model.per_image["CIDEr"], np.float64),
              num_strata=strata.num_strata, stratum=strata.stratum)
    return _load_npz(path)


def load_snapshot(spec: RunSpec, folder: Path, epoch: int, vocab):
    return load_trained(spec.snapshot(folder, epoch), vocab)


def write_json(value, path: Path) -> None:
    io.write_text(json.dumps(value, indent=1, sort_keys=True), path)
