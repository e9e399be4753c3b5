"""The life of one model, declared once: the stages every model goes through, in order.

    train ── reference probabilities ──────────────────────────┐
          └─ captions ── strata (per-image CIDEr) ── post-gen ──┴── pre-gen sweep

``STAGES`` lists them: each stage's name, the stages it reads, what determines its cache key
(besides the keys of what it reads), where it runs and its function. ``score_unit`` and
``score_model`` run the whole list for one model; the search runs the same list in parts
(``start``, then ``advance`` part by part): the ``main`` stages in its own process, the
``worker`` stages (post-gen scoring, no accelerator) in a pool of workers while the next model
trains. Every caller (the search, its workers, the experiments, ``unit-tests``) goes through
here, so there is no second copy of the stage order.

The cache is a parameter: ``StageCache`` (read-write), ``ReadOnlyCache`` (another process
computed every entry) or ``NoCache`` (compute everything, keep nothing).
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import threading
from collections.abc import Callable, Collection
from typing import Any

import numpy as np
import pandas as pd

from .. import postgen, tiers
from ..captioning import generate_captions, reference_probs
from ..captioning.input_pipeline import reference_word_starts
from ..refprobs import RefProbs
from ..strata import NUM_SPEC_STRATA, SPEC_MAX_K, Strata, spec_strata
from .cache import NoCache, Stage, StageCache
from .config import SearchConfig
from .postgen_metrics import LazyMetrics, gts_res
from .sources import TRAIN, Data, SearchModel, TrainingJob

MAIN, WORKER = "main", "worker"  # where a stage runs: the process that holds the accelerator, or a CPU worker

REFPROBS = Stage("refprobs", 1)
CAPTIONS = Stage("captions", 1)
STRATA = Stage("strata", 1)
POSTGEN = Stage("postgen", 1)
PREGEN = Stage("pregen", 1)


@dataclasses.dataclass(frozen=True)
class FlowSettings:
    """What the stages need besides the model and the data: the same for every model of a search.

    ``config``: training and generation settings (None in a post-gen worker, which needs neither);
    ``metrics``: the post-gen metrics; ``space``/``space_id``: the pre-gen space and its identity.
    """

    config: SearchConfig | None
    metrics: LazyMetrics | None
    space: tiers.Space | None = None
    space_id: str = ""
    progress: bool = False
    warn_unknown: bool = True  # warn about reference tokens outside the vocabulary


@dataclasses.dataclass
class Context:
    """One process's view of a flow: the data, the settings, the cache, and a stage timer."""

    data: Data
    settings: FlowSettings
    cache: StageCache
    timer: Callable[[str], contextlib.AbstractContextManager] = lambda label: contextlib.nullcontext()
    stop: threading.Event | None = None  # set: trainings in other threads end at their next step


@dataclasses.dataclass
class ModelScores:
    """One model's way through the flow: every visited stage's value and cache key, in visit order.

    Values: ``train`` the SearchModel; ``refprobs`` RefProbs; ``captions`` list of token lists (one
    per test image); ``strata`` Strata (S = 15 strata over I test images); ``postgen``
    (DataFrame f[S] per metric, dict metric -> f[I] per image); ``pregen`` f[S, C].
    """

    candidate: SearchModel
    values: dict[str, Any] = dataclasses.field(default_factory=dict)
    keys: dict[str, str] = dataclasses.field(default_factory=dict)
    visited: list[str] = dataclasses.field(default_factory=list)
    position: int = 0  # the index in STAGES of the next stage to run

    @property
    def finished(self) -> bool:
        return self.position >= len(STAGES)

    @property
    def post(self) -> pd.DataFrame:
        return self.values["postgen"][0]

    @property
    def per_image(self) -> dict[str, np.ndarray]:
        return self.values["postgen"][1]


@dataclasses.dataclass(frozen=True)
class FlowStage:
    """One stage of the flow.

    ``reads``: the stages whose values (and keys) it reads; ``keyed_by``: what else determines its
    cache key; ``where``: MAIN or WORKER; ``timed_as``: its timer label; ``run(context, model)``
    returns (value, key).
    """

    name: str
    reads: tuple[str, ...]
    keyed_by: str
    where: str
    timed_as: Callable[[FlowSettings], str]
    run: Callable[[Context, Any], tuple[Any, str]]


# ------------------------------------------------------------------ the stages


def _train(ctx: Context, unit: TrainingJob | SearchModel) -> tuple[list[SearchModel], str]:
    """The unit's models: a training job's final model and snapshots, or a model given ready-made."""
    if isinstance(unit, SearchModel):
        return [unit], unit.key
    config, data = ctx.settings.config, ctx.data
    if ctx.cache.read_only:  # another process trained it: only name its entries
        return unit.candidates(config, data), unit.entry.key
    if isinstance(ctx.cache, NoCache):
        raise ValueError(f"{unit.label}: training needs a stage cache to keep its checkpoints in")
    ctx.cache.count(TRAIN, reused=unit.entry.done)
    return unit.train(config, data, ctx.settings.progress, ctx.stop), unit.entry.key


def _ref_probs(ctx: Context, model: ModelScores) -> tuple[RefProbs, str]:
    """The model's probabilities of the test references (precomputed ones pass through)."""
    candidate, data = model.candidate, ctx.data
    if candidate.ref_probs is not None:
        return candidate.ref_probs, candidate.key
    trained, test = candidate.trained, data.test

    def compute():
        return reference_probs(trained.model, trained.params, test.features, test.captions, data.vocab,
                               progress=ctx.settings.progress, source=f"{candidate.label} on the test references",
                               warn_unknown=ctx.settings.warn_unknown)
    value, entry = ctx.cache.cached(REFPROBS, candidate.label, None, (model.keys["train"], data.split_key("test")),
                                    compute, lambda rp, folder: rp.save(folder / "refprobs.npz"),
                                    lambda folder: RefProbs.load(folder / "refprobs.npz", allow_zero=True))
    return in_units(value, entry.key, data, ctx.settings.config.pregen.units)


def in_units(ref_probs: RefProbs, key: str, data, units: str) -> tuple[RefProbs, str]:
    """A model's token-level RefProbs of the test references in ``units``, and its key: the
    model's tokens are what is cached (the key names that entry); with a subword vocabulary, word
    units combine each word's pieces (``pieces``), and the pre-gen stage keys on the units."""
    vocab = data.vocab
    if vocab.kind == "word":  # a token is a word: the two units are the same numbers
        return dataclasses.replace(ref_probs, units=units, vocabulary=vocab.name), key
    tokens = dataclasses.replace(ref_probs, units="token", vocabulary=vocab.name)
    if units == "token":
        return tokens, key
    return tokens.to_words(reference_word_starts(data.test.captions, vocab)), key


def _captions(ctx: Context, model: ModelScores) -> tuple[list[list[str]], str]:
    """The model's captions of the test images (precomputed ones pass through)."""
    candidate, data, generation = model.candidate, ctx.data, ctx.settings.config.generation
    if candidate.captions is not None:
        return candidate.captions, candidate.key
    trained = candidate.trained

    def compute():
        return generate_captions(trained.model, trained.params, data.test.features, data.vocab,
                                 generation.beam_width, generation.max_len, generation.min_len,
                                 progress=ctx.settings.progress)

    def save(captions, folder):
        (folder / "captions.txt").write_text("".join(" ".join(c) + "\n" for c in captions), encoding="utf-8")

    def load(folder):
        return [line.split() for line in (folder / "captions.txt").read_text(encoding="utf-8").splitlines()]
    value, entry = ctx.cache.cached(CAPTIONS, candidate.label, dataclasses.asdict(generation),
                                    (model.keys["train"], data.split_key("test")), compute, save, load)
    return value, entry.key


def strata_of(data: Data, captions, backend: str = "native") -> Strata:
    """The spec's strata of one model's test captions: the images sorted by their own CIDEr-D, cut
    into 1..5 blocks (``backend``: CIDEr-D's, the same numbers either way)."""
    _, per_image_cider = postgen.CIDEr(backend).compute_score(*gts_res(data, captions))
    return spec_strata(per_image_cider)


def _strata(ctx: Context, model: ModelScores) -> tuple[Strata, str]:
    """The spec's strata (``strata_of``), through the stage cache."""
    data, captions = ctx.data, model.values["captions"]

    def compute():
        return strata_of(data, captions)

    def save(strata, folder):
        np.savez(folder / "strata.npz", mask=strata.mask, num_strata=strata.num_strata, stratum=strata.stratum)

    def load(folder):
        with np.load(folder / "strata.npz") as npz:
            return Strata(npz["mask"], npz["num_strata"], npz["stratum"])
    value, entry = ctx.cache.cached(STRATA, model.candidate.label, {"max_k": SPEC_MAX_K},
                                    (model.keys["captions"], data.split_key("test", False)), compute, save, load)
    return value, entry.key


def _postgen(ctx: Context, model: ModelScores) -> tuple[tuple[pd.DataFrame, dict], str]:
    """Post-gen scores: (f[S] per metric as a DataFrame, per-image scores f[I] per metric).

    Each metric is its own cache entry, so adding a metric to the config computes only it.
    """
    data, metrics, strata = ctx.data, ctx.settings.metrics, model.values["strata"]
    gts, res = gts_res(data, model.values["captions"], metrics.config.tokenizer)
    blocks = strata.blocks(data.test.image_ids)
    upstream = (model.keys["captions"], model.keys["strata"], data.split_key("test", False))
    columns, per_image, keys = {}, {}, []
    for name in metrics.names:
        def compute(name=name):
            return metrics[name].score_blocks(gts, res, blocks)

        def save(value, folder):
            np.savez(folder / "scores.npz", strata=value[0], per_image=value[1])

        def load(folder):
            with np.load(folder / "scores.npz") as npz:
                return npz["strata"], npz["per_image"]
        (stratum_scores, image_scores), entry = ctx.cache.cached(
            POSTGEN, f"{model.candidate.label}-{name}", metrics.settings(name), upstream, compute, save, load)
        columns[name], per_image[name] = np.asarray(stratum_scores, float), np.asarray(image_scores, float)
        keys.append(entry.key)
    return (pd.DataFrame(columns), per_image), ",".join(keys)


def _pregen(ctx: Context, model: ModelScores) -> tuple[np.ndarray, str]:
    """Every metric of the space on every stratum: f[S, C]."""
    settings, ref_probs, strata = ctx.settings, model.values["refprobs"], model.values["strata"]
    keyed = {"space": settings.space_id}
    if ctx.data.vocab.kind != "word":  # pieces or words of pieces: other numbers from one cached RefProbs
        keyed["units"] = ref_probs.units
    value, entry = ctx.cache.cached(PREGEN, model.candidate.label, keyed,
                                    (model.keys["refprobs"], model.keys["strata"]),
                                    lambda: tiers.sweep(ref_probs, strata.mask, settings.space),
                                    lambda scores, folder: np.save(folder / "pregen.npy", scores),
                                    lambda folder: np.load(folder / "pregen.npy"))
    return value, entry.key


def _sweep_label(settings: FlowSettings) -> str:
    return f"pre-gen sweep ({len(settings.space) if settings.space else 0} metrics x {NUM_SPEC_STRATA} strata)"


STAGES: tuple[FlowStage, ...] = (
    FlowStage("train", (), "architecture, captioner and training settings, seed; train/val splits, vocabulary",
              MAIN, lambda s: "training", _train),
    FlowStage("refprobs", ("train",), "the test split (references and image features)",
              MAIN, lambda s: "reference probabilities", _ref_probs),
    FlowStage("captions", ("train",), "[generation] settings; the test split",
              MAIN, lambda s: f"generation (beam {s.config.generation.beam_width})", _captions),
    FlowStage("strata", ("captions",), "the number of cuts; the test references",
              WORKER, lambda s: "post-gen metrics", _strata),
    FlowStage("postgen", ("captions", "strata"), "per metric: what determines its scores; the test references",
              WORKER, lambda s: "post-gen metrics", _postgen),
    FlowStage("pregen", ("refprobs", "strata"), "the space's metric names and tier functions' code",
              MAIN, _sweep_label, _pregen),
)
STAGE_NAMES = tuple(stage.name for stage in STAGES)


def parts() -> list[tuple[FlowStage, ...]]:
    """The stages cut where they change process: [train, refprobs, captions], [strata, postgen], [pregen]."""
    return [tuple(group) for _, group in itertools.groupby(STAGES, key=lambda stage: stage.where)]


def timed_labels(settings: FlowSettings) -> list[list[str]]:
    """Each part's timer labels, in stage order (stages of one part may share a label)."""
    return [list(dict.fromkeys(stage.timed_as(settings) for stage in part)) for part in parts()]


# ------------------------------------------------------------------ running the stages


def start_unit(unit: TrainingJob | SearchModel, ctx: Context) -> list[ModelScores]:
    """The first stage (train) of one unit: one ModelScores per model it gives (final model, snapshots)."""
    first = STAGES[0]
    with ctx.timer(first.timed_as(ctx.settings)):
        candidates, _ = first.run(ctx, unit)
    return [ModelScores(c, {first.name: c}, {first.name: c.key}, [first.name], 1) for c in candidates]


def advance(model: ModelScores, ctx: Context, only: Collection[str] | None = None) -> ModelScores:
    """Run the next part of the flow on ``model`` (the stages up to the next change of process).

    ``only``: run just these stages (the others are passed over, not visited); a stage whose
    input was passed over is an error. A stage whose value is already there (given) is passed over.
    """
    at = end = model.position
    while end < len(STAGES) and STAGES[end].where == STAGES[at].where:
        end += 1
    for stage in STAGES[at:end]:
        if (only is not None and stage.name not in only) or stage.name in model.values:
            continue
        missing = [name for name in stage.reads if name not in model.values]
        if missing:
            raise ValueError(f"{model.candidate.label}: stage {stage.name} reads {missing[0]}, which did not run")
        with ctx.timer(stage.timed_as(ctx.settings)):
            value, key = stage.run(ctx, model)
        model.values[stage.name], model.keys[stage.name] = value, key
        model.visited.append(stage.name)
    model.position = end
    return model


def score_unit(unit: TrainingJob | SearchModel, data: Data, settings: FlowSettings, cache: StageCache | None = None,
               only: Collection[str] | None = None, given: dict[str, tuple[Any, str]] | None = None
               ) -> list[ModelScores]:
    """Every stage, in order, for each model of ``unit``, in this process.

    ``cache``: read-write (``StageCache``), read-only (``ReadOnlyCache``) or none (``None`` or
    ``NoCache``); ``only``: the stages to run (default all); ``given``: stage -> (value, key) for
    stages not to run (e.g. one whole-test-set stratum instead of the spec's strata).
    """
    ctx = Context(data, settings, cache if cache is not None else NoCache())
    models = start_unit(unit, ctx)
    for model in models:
        for name, (value, key) in (given or {}).items():
            model.values[name], model.keys[name] = value, key
        while not model.finished:
            advance(model, ctx, only)
    return models


def score_model(model: SearchModel, data: Data, settings: FlowSettings, cache: StageCache | None = None,
                only: Collection[str] | None = None, given: dict[str, tuple[Any, str]] | None = None
                ) -> ModelScores:
    """Every stage, in order, for one ready model (trained, from a checkpoint, or precomputed outputs)."""
    return score_unit(model, data, settings, cache, only, given)[0]


def for_worker(model: ModelScores) -> ModelScores:
    """``model`` with only what its next part reads: cheap to send to a post-gen worker (no parameters,
    no reference probabilities)."""
    at = model.position
    reads = {name for stage in STAGES[at:] if stage.where == STAGES[at].where for name in stage.reads}
    slim = dataclasses.replace(model.candidate, trained=None, ref_probs=None, captions=None)
    values = {name: value for name, value in model.values.items() if name in reads and name != "train"}
    return ModelScores(slim, values, dict(model.keys), list(model.visited), at)


def merge(model: ModelScores, done: ModelScores) -> ModelScores:
    """Take up the stages a worker ran on ``for_worker(model)``."""
    assert done.visited[:len(model.visited)] == model.visited, (model.visited, done.visited)
    for name in done.visited[len(model.visited):]:
        model.values[name], model.keys[name] = done.values[name], done.keys[name]
    model.visited, model.position = list(done.visited), done.position
    return model
