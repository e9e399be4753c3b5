"""The search: data -> models -> per model (reference probabilities, captions, strata,
post-gen and pre-gen metrics per stratum) -> the table -> the ranking.

Inputs are all checked before the first model trains; every per-model stage is cached in
``<out>/cache`` (see ``cache``), so an interrupted run resumes where it stopped and a finished
one re-renders its report in seconds. Nothing but ``cache/`` is written here: ``report``
publishes the outputs.

The work is a list of units (a model to train and evaluate, or a model given ready-made).
Each unit is trained, then its models decoded, here; their post-gen scoring goes to a pool of
workers (``workers``) so that the next unit trains meanwhile. Several processes
(``distributed``) split the units between them; process 0 then reads the others' results
from the shared cache. One process with no workers is the plain sequential search.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import io, ranking
from ..datasets import TOKENIZER, TOKENIZER_NAME
from . import sources, stages
from .cache import StageCache
from .config import ID_COLUMNS, SearchConfig
from .distributed import Cluster, compiled_programs_kept_in
from .workers import PostgenPool, default_workers

STAGE_NAMES = ("train", "refprobs", "captions", "strata", "postgen", "pregen")
NUM_STRATA = 15  # the spec's 1 + 2 + 3 + 4 + 5 (stages.strata_stage)


def timed_stages(config: SearchConfig, space_size: int) -> list[str]:
    """The stages a search times, in report order (the same list on every process).

    Times are summed over models, worker processes and search processes; post-gen metrics
    run in workers while the next model trains, so the stages can add up to more than the
    total, which is process 0's wall-clock time.
    """
    return ["data and image features", "training", "reference probabilities",
            f"generation (beam {config.generation.beam_width})", "post-gen metrics", "waiting for post-gen workers",
            f"pre-gen sweep ({space_size} metrics x {NUM_STRATA} strata)"]


class StageTimer:
    """Wall-clock seconds per named stage, summed over models."""

    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, stage: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - start)

    def add(self, stage: str, seconds: float) -> None:
        self.seconds[stage] = self.seconds.get(stage, 0.0) + seconds


@dataclasses.dataclass
class ModelResult:
    """What the search learned about one model, besides its table rows."""

    label: str
    architecture: str
    run: str
    epoch: str
    per_image: dict[str, np.ndarray]   # post-gen metric -> f[I] per-image scores on the whole test set
    quality: dict                      # caption_quality(): distinct share, repeats, problems
    keys: dict = dataclasses.field(default_factory=dict)  # stage -> cache key ("model", "refprobs", "strata")


@dataclasses.dataclass
class SearchResult:
    out: Path
    table: pd.DataFrame
    ranking: ranking.Ranking
    postgen_names: list[str]
    unavailable: dict[str, str]
    timings: dict[str, float]
    facts: dict
    models: list[ModelResult]
    stages: dict[str, dict[str, int]]  # stage -> {"computed": n, "reused": m}
    vocab: object = None
    reference_lengths: np.ndarray | None = None  # i32[I, R]: positions (tokens + 1) of each test reference
    references: object = None          # refprobs.References: the test references' fingerprint


@dataclasses.dataclass
class Evaluated:
    """One model's table rows and what the report says about it."""

    rows: pd.DataFrame
    model: ModelResult


class ReadOnlyCache(StageCache):
    """The stage cache as process 0 reads the other processes' results: every entry must be done."""

    def cached(self, stage, label, settings, upstream, compute, save, load):
        entry = self.entry(stage, label, settings, upstream)
        if not entry.done:
            raise ValueError(f"{entry.folder}: another process did not finish {stage.name} of {label} "
                             "(stopped early?); rerun the same command to resume")
        return load(entry.folder), entry


@dataclasses.dataclass
class Search:
    """One search's fixed parts: what every model's stages need."""

    config: SearchConfig
    data: sources.Data
    space: object
    space_id: str
    metrics: stages.LazyMetrics
    progress: bool

    def rows(self, candidate: sources.Candidate, strata, post: pd.DataFrame, pre: np.ndarray, per_image: dict,
             captions) -> Evaluated:
        ids = pd.DataFrame({"dataset": self.data.dataset.name, "architecture": candidate.architecture,
                            "run": candidate.run, "epoch": candidate.epoch,
                            "num_strata": strata.num_strata, "stratum": strata.stratum})
        rows = pd.concat([ids, post, pd.DataFrame(pre, columns=self.space.names)], axis=1)
        rows["vocabulary"], rows["units"] = self.model_side(candidate)
        return Evaluated(rows, ModelResult(candidate.label, candidate.architecture, candidate.run, candidate.epoch,
                                           per_image, stages.caption_quality(captions)))

    def model_side(self, candidate: sources.Candidate) -> tuple[str, str]:
        """The table's ``vocabulary`` and ``units`` of a model: the search's, or what a precomputed
        model's RefProbs records (its positions are the corpus's words: ``check_references``)."""
        if candidate.ref_probs is not None:
            return candidate.ref_probs.vocabulary or "unknown", "word"
        return self.data.vocab.name, self.config.pregen.units

    def decode(self, cache: StageCache, candidate: sources.Candidate, timer: StageTimer):
        """Reference probabilities and captions of one model (JAX, on this process's devices)."""
        with timer("reference probabilities"):
            ref_probs, ref_probs_key = stages.ref_probs_stage(cache, candidate, self.data, self.progress,
                                                              self.config.pregen.units)
        with timer(f"generation (beam {self.config.generation.beam_width})"):
            captions, captions_key = stages.captions_stage(cache, candidate, self.data, self.config.generation,
                                                           self.progress)
        return ref_probs, ref_probs_key, captions, captions_key

    def finish(self, cache: StageCache, candidate, ref_probs, ref_probs_key, captions, scored, timer) -> Evaluated:
        """The pre-gen sweep over the strata the post-gen job found, and the model's rows."""
        with timer(timed_stages(self.config, len(self.space))[-1]):
            pre = stages.pregen_stage(cache, candidate, ref_probs, ref_probs_key, scored.strata, scored.strata_key,
                                      self.space, self.space_id)
        evaluated = self.rows(candidate, scored.strata, scored.post, pre, scored.per_image, captions)
        evaluated.model.keys = {"model": candidate.key, "refprobs": ref_probs_key, "strata": scored.strata_key}
        return evaluated

    def read(self, cache: ReadOnlyCache, candidate: sources.Candidate) -> Evaluated:
        """Another process's model, every stage read from the cache."""
        ref_probs, ref_probs_key, captions, captions_key = self.decode(cache, candidate, StageTimer())
        strata, strata_key = stages.strata_stage(cache, candidate, captions, captions_key, self.data)
        post, per_image = stages.postgen_stage(cache, candidate, captions, captions_key, strata, strata_key,
                                               self.data, self.metrics)
        pre = stages.pregen_stage(cache, candidate, ref_probs, ref_probs_key, strata, strata_key, self.space,
                                  self.space_id)
        evaluated = self.rows(candidate, strata, post, pre, per_image, captions)
        evaluated.model.keys = {"model": candidate.key, "refprobs": ref_probs_key, "strata": strata_key}
        return evaluated


def run_search(config: SearchConfig, out, progress: bool = True, cluster: Cluster | None = None,
               workers: int | None = None) -> SearchResult | None:
    """Run (or resume) the search into ``out``'s cache; process 0 returns the result, others None.

    ``cluster``: this process among the search's processes (default: the only one);
    ``workers``: post-gen worker processes (default: one per spare core, see ``workers``).
    """
    cluster = cluster or Cluster()
    out = io.check_out_folder(out)
    cluster.check_same("the search config or --out", config.to_toml() + str(out))
    progress = progress and cluster.is_main  # one set of progress bars
    io.claim_out_folder(out)  # every process: the cache (and XLA's programs) go in from here on
    with compiled_programs_kept_in(out / "cache"):
        return _run(config, out, progress, cluster, workers)


def _load_data(config: SearchConfig, progress: bool, cluster: Cluster, out: Path) -> sources.Data:
    """The data, built by process 0 first, so that the others read its cached dataset and encoder
    (where they share its home folder) instead of building them too."""
    if not cluster.is_main:
        cluster.barrier("data ready")
    data = sources.load_data(config, progress, out)
    if cluster.is_main:
        cluster.barrier("data ready")
    return data


def _run(config: SearchConfig, out: Path, progress: bool, cluster: Cluster, workers: int | None):
    timer = StageTimer()
    wall = time.perf_counter()
    with timer("data and image features"):
        data = _load_data(config, progress, cluster, out)
        space = stages.tier_space(config.pregen)
        # Everything a user supplied is read and checked here, before anything is trained or written.
        units: list = sources.precomputed_candidates(config, data)
        units += sources.checkpoint_candidates(config, data)
    cache = StageCache(out / "cache")
    if not config.precomputed and not config.models.checkpoints:
        units += sources.training_jobs(config, data, cache)
    if not units:
        raise ValueError("no models to evaluate (configure [models], checkpoints or [[precomputed]])")

    metrics = stages.LazyMetrics(config.postgen, data)
    for name, why in metrics.unavailable.items():
        if cluster.is_main:
            tqdm.write(f"{name} unavailable: {why}")
    search = Search(config, data, space, stages.space_key(space), metrics, progress)
    mine = cluster.mine(range(len(units)))
    if workers is None:
        workers = default_workers(cluster.on_this_host) if len(mine) > 1 else 0  # pays when models can overlap
    evaluated: dict[int, list[Evaluated]] = {}
    try:
        with PostgenPool(workers, data, config.postgen, cache.root) as pool:
            evaluated = _evaluate_mine(search, units, mine, cache, pool, timer)
    finally:
        metrics.close()
    cluster.barrier("models evaluated")

    counts = _gathered_counts(cache, cluster)
    timings = _gathered_timings(timer, timed_stages(config, len(space)), cluster)
    if not cluster.is_main:
        return None
    reader = ReadOnlyCache(cache.root)
    results: list[Evaluated] = []
    for position, unit in enumerate(units):
        if position in evaluated:
            results += evaluated[position]
        else:
            candidates = unit.candidates(config, data) if isinstance(unit, sources.TrainingJob) else [unit]
            results += [search.read(reader, candidate) for candidate in candidates]

    table = pd.concat([r.rows for r in results], ignore_index=True)
    table["tokenizer"] = TOKENIZER_NAME
    postgen_names = metrics.names
    start = time.perf_counter()
    result = ranking.rank(table, postgen_names, space.names, group_by=config.pregen.group_by or None)
    timings["ranking"] = time.perf_counter() - start
    assert list(table.columns[:len(ID_COLUMNS)]) == list(ID_COLUMNS)
    facts = dict(data.facts, tokenizer=TOKENIZER, units=config.pregen.units, space=len(space))
    timings["total"] = time.perf_counter() - wall
    lengths = np.zeros((len(data.test), max(len(refs) for refs in data.test.captions)), np.int32)
    for i, refs in enumerate(data.test.captions):
        lengths[i, :len(refs)] = [len(ref) + 1 for ref in refs]
    return SearchResult(out, table, result, postgen_names, metrics.unavailable, timings, facts,
                        [r.model for r in results], counts, data.vocab, lengths,
                        dataclasses.replace(data.references, units=config.pregen.units))


def _evaluate_mine(search: Search, units: list, mine: list[int], cache: StageCache, pool: PostgenPool,
                   timer: StageTimer) -> dict[int, list[Evaluated]]:
    """Train and decode this process's units in order; score each model in the pool meanwhile.

    Finished post-gen jobs are taken up (their pre-gen sweep, their rows) in model order
    between units, and all of them at the end.
    """
    evaluated: dict[int, list[Evaluated]] = {position: [] for position in mine}
    pending: collections.deque = collections.deque()

    def take_up(block: bool) -> None:
        while pending and (block or pending[0][-1].done()):
            position, candidate, ref_probs, ref_probs_key, captions, future = pending.popleft()
            if not future.done():
                with timer("waiting for post-gen workers"):
                    scored = future.result()
            else:
                scored = future.result()
            timer.add("post-gen metrics", scored.seconds)
            for stage, counted in scored.counts.items():
                cache.log[stage].update(counted)
            evaluated[position].append(search.finish(cache, candidate, ref_probs, ref_probs_key, captions, scored,
                                                     timer))

    for position in tqdm(mine, desc="models", unit="unit", disable=not search.progress):
        unit = units[position]
        if isinstance(unit, sources.TrainingJob):
            with timer("training"):
                candidates = unit.train(search.config, search.data, cache, search.progress)
        else:
            candidates = [unit]
        for candidate in candidates:
            ref_probs, ref_probs_key, captions, captions_key = search.decode(cache, candidate, timer)
            future = pool.submit(candidate, captions, captions_key)
            pending.append((position, candidate, ref_probs, ref_probs_key, captions, future))
            take_up(block=False)
    take_up(block=True)
    return evaluated


def _gathered_timings(timer: StageTimer, names: list[str], cluster: Cluster) -> dict[str, float]:
    """Seconds per stage summed over processes; stages no process timed are left out."""
    unknown = set(timer.seconds) - set(names)
    assert not unknown, f"untimed stage names {unknown}"
    local = [timer.seconds.get(name, 0.0) for name in names] + [float(name in timer.seconds) for name in names]
    total = cluster.sum(np.array(local))
    return {name: float(total[k]) for k, name in enumerate(names) if total[len(names) + k]}


def _gathered_counts(cache: StageCache, cluster: Cluster) -> dict[str, dict[str, int]]:
    """The stage cache's computed/reused counts, summed over processes (and their workers)."""
    mine = cache.counts()
    local = np.array([mine.get(stage, {}).get(kind, 0) for stage in STAGE_NAMES for kind in ("computed", "reused")])
    total = cluster.sum(local).astype(int).reshape(len(STAGE_NAMES), 2)
    return {stage: {"computed": int(c), "reused": int(r)} for stage, (c, r) in zip(STAGE_NAMES, total)
            if stage in mine or c or r}
