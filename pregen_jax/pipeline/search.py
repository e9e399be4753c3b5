"""The search: data -> models -> per model the flow (``flow.STAGES``: training, reference
probabilities, captions, strata, post-gen and pre-gen metrics per stratum) -> the table -> the ranking.

Inputs are all checked before the first model trains; every per-model stage is cached in
``<out>/cache`` (see ``cache``), so an interrupted run resumes where it stopped and a finished
one re-renders its report in seconds. Nothing but ``cache/`` is written here: ``report``
publishes the outputs.

The work is a list of units (a model to train and evaluate, or a model given ready-made).
Each unit goes through the flow: its main-process parts (training and decoding, then the
pre-gen sweep) run here, its worker part (post-gen scoring) in a pool of workers (``workers``)
so that the next unit trains meanwhile. Several processes
(``distributed``) split the units between them; process 0 then reads the others' results
from the shared cache. One process with no workers is the plain sequential search.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import io, postgen, ranking
from ..progress import bar_disabled
from . import flow, sources
from .cache import ReadOnlyCache, StageCache
from .config import ID_COLUMNS, SearchConfig
from .distributed import Cluster, compiled_programs_kept_in
from .late import LateSteps
from .postgen_metrics import SEARCH_TOKENIZERS, LazyMetrics
from .preflight import check_search
from .quality import caption_quality
from .space import space_key, tier_space
from .trainers import default_trainers, started_in_order, trainers_fill_cores
from .workers import PostgenPool, default_workers

WAITING = "waiting for post-gen workers"


def timed_stages(settings: flow.FlowSettings) -> list[str]:
    """The stages a search times, in report order (the same list on every process).

    Times are summed over models, worker processes and search processes; post-gen metrics
    run in workers while the next model trains, so the stages can add up to more than the
    total, which is process 0's wall-clock time.
    """
    names = ["data and image features"]
    for stages, labels in zip(flow.parts(), flow.timed_labels(settings)):
        names += labels + ([WAITING] if stages[0].where == flow.WORKER else [])
    return names


class StageTimer:
    """Wall-clock seconds per named stage, summed over models."""

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()  # trainer threads time their training

    @contextlib.contextmanager
    def __call__(self, stage: str):
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - start)

    def add(self, stage: str, seconds: float) -> None:
        with self._lock:
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
    references: object = None          # refprobs.ReferenceFingerprint: the test references' fingerprint
    left_out: dict[str, str] = dataclasses.field(default_factory=dict)  # label -> why the findings leave it out
    late: LateSteps = dataclasses.field(default_factory=LateSteps)  # the steps after the table: what was not done

    @property
    def findings_models(self) -> list[ModelResult]:
        """The models the findings (ranking, decisions, calibration, plots) rest on, in table order."""
        return [model for model in self.models if model.label not in self.left_out]

    @property
    def findings_table(self) -> pd.DataFrame:
        """The table's rows of ``findings_models``."""
        return findings_rows(self.table, [(m.architecture, m.run, m.epoch) for m in self.findings_models])


def findings_rows(table: pd.DataFrame, kept: list[tuple[str, str, str]]) -> pd.DataFrame:
    """The rows of ``table`` whose (architecture, run, epoch) is in ``kept`` (all of it when every model is kept)."""
    ids = list(zip(table["architecture"].astype(str), table["run"].astype(str), table["epoch"].astype(str)))
    kept = set(kept)
    keep = np.array([i in kept for i in ids])
    return table if keep.all() else table[keep].reset_index(drop=True)


def left_out_models(models: list[ModelResult], degenerate: str) -> dict[str, str]:
    """label -> reason, for the models the findings leave out: degenerate ones (``[pregen] degenerate =
    "exclude"``), unless fewer than two models would remain (then every model stays, and the report says so)."""
    if degenerate != "exclude":
        return {}
    flagged = {m.label: "degenerate: " + "; ".join(m.quality["problems"]) for m in models if m.quality["problems"]}
    return flagged if len(models) - len(flagged) >= 2 else {}


@dataclasses.dataclass
class Evaluated:
    """One model's table rows and what the report says about it."""

    rows: pd.DataFrame
    model: ModelResult


@dataclasses.dataclass
class Search:
    """One search's fixed parts: what every model's stages need."""

    config: SearchConfig
    data: sources.Data
    settings: flow.FlowSettings

    def context(self, cache: StageCache, timer) -> flow.Context:
        return flow.Context(self.data, self.settings, cache, timer)

    def rows(self, model: flow.ModelScores) -> Evaluated:
        """One model's table rows (ids, post-gen, pre-gen per stratum) and what the report says of it."""
        candidate, strata = model.candidate, model.values["strata"]
        ids = pd.DataFrame({"dataset": self.data.dataset.name, "architecture": candidate.architecture,
                            "run": candidate.run, "epoch": candidate.epoch,
                            "num_strata": strata.num_strata, "stratum": strata.stratum})
        rows = pd.concat([ids, model.post, pd.DataFrame(model.values["pregen"], columns=self.settings.space.names)],
                         axis=1)
        rows["vocabulary"], rows["units"] = self.model_side(candidate)
        result = ModelResult(candidate.label, candidate.architecture, candidate.run, candidate.epoch,
                             model.per_image, caption_quality(model.values["captions"]))
        result.keys = {"model": candidate.key, "refprobs": model.keys["refprobs"], "strata": model.keys["strata"]}
        return Evaluated(rows, result)

    def model_side(self, candidate: sources.SearchModel) -> tuple[str, str]:
        """The table's ``vocabulary`` and ``units`` of a model: the search's, or what a precomputed
        model's RefProbs records (its positions are the corpus's words: ``check_references``)."""
        if candidate.ref_probs is not None:
            return candidate.ref_probs.vocabulary or "unknown", "word"
        return self.data.vocab.name, self.config.pregen.units

    def read(self, cache: ReadOnlyCache, unit) -> list[Evaluated]:
        """Another process's unit, every stage read from the cache."""
        return [self.rows(model) for model in flow.score_unit(unit, self.data, self.settings, cache)]


def run_search(config: SearchConfig, out, progress: bool = True, cluster: Cluster | None = None,
               workers: int | None = None, trainers: int | None = None, source: str = "config") -> SearchResult | None:
    """Run (or resume) the search into ``out``'s cache; process 0 returns the result, others None.

    First, before any work, the same checks as the CLI (``preflight.check_search``; ``source``
    names the config in their one-line errors): a bad input raises ``ValueError`` and leaves nothing.

    ``cluster``: this process among the search's processes (default: the only one);
    ``workers``: post-gen worker processes (default: one per spare core, see ``workers``);
    ``trainers``: models trained at once, in threads (default: one per core on a CPU, see ``trainers``).
    """
    cluster = cluster or Cluster()
    check_search(config, source)
    out = io.check_out_folder(out)
    cluster.check_same("the search config or --out", config.to_toml() + str(out))
    progress = progress and cluster.is_main  # one set of progress bars
    # every process: the cache (and XLA's programs) go in from here on; a rejected input leaves no folder
    with io.claimed_out_folder(out) if cluster.count == 1 else _claimed(out):
        with compiled_programs_kept_in(out / "cache"):
            return _run(config, out, progress, cluster, workers, trainers)


@contextlib.contextmanager
def _claimed(out):
    yield io.claim_out_folder(out)


def _load_data(config: SearchConfig, progress: bool, cluster: Cluster, out: Path) -> sources.Data:
    """The data, built by process 0 first, so that the others read its cached dataset and encoder
    (where they share its home folder) instead of building them too."""
    if not cluster.is_main:
        cluster.barrier("data ready")
    data = sources.load_data(config, progress, out)
    if cluster.is_main:
        cluster.barrier("data ready")
    return data


def _run(config: SearchConfig, out: Path, progress: bool, cluster: Cluster, workers: int | None,
         trainers: int | None):
    timer = StageTimer()
    wall = time.perf_counter()
    with timer("data and image features"):
        data = _load_data(config, progress, cluster, out)
        space = tier_space(config.pregen)
        # Everything a user supplied is read and checked here, before anything is trained or written.
        units: list = sources.precomputed_candidates(config, data)
        units += sources.checkpoint_candidates(config, data)
    cache = StageCache(out / "cache")
    if not config.precomputed and not config.models.checkpoints:
        units += sources.training_jobs(config, data, cache)
    if not units:
        raise ValueError("no models to evaluate (configure [models], checkpoints or [[precomputed]])")

    metrics = LazyMetrics(config.postgen, data)
    for name, why in metrics.unavailable.items():
        if cluster.is_main:
            tqdm.write(f"{name} unavailable: {why}")
    if "WMD" in metrics.names and cluster.is_main and not postgen.resolve_stopwords(config.postgen.options)[0]:
        # every WMD value moves with the stop words: a checkout without the 2018 list must not pass for one with it
        tqdm.write("warning: WMD scores with no stop words, so every WMD value differs from a run with the 2018 NLTK "
                   "list (a model of the quick demo: 0.59 against 0.18); set [postgen] stopwords to a stop-word file")
    search = Search(config, data, flow.FlowSettings(config, metrics, space, space_key(space), progress))
    mine = cluster.mine(range(len(units)))
    if workers is None:
        workers = default_workers(cluster.on_this_host) if len(mine) > 1 else 0  # pays when models can overlap
    if trainers is None:
        trainers = default_trainers(cluster.on_this_host)
    trainers = min(trainers, len(mine)) or 1
    evaluated: dict[int, list[Evaluated]] = {}
    try:
        with PostgenPool(workers, data, config.postgen, cache.root) as pool:
            evaluated = _evaluate_mine(search, units, mine, cache, pool, timer, trainers,
                                       hold_postgen=trainers_fill_cores(trainers, cluster.on_this_host))
    finally:
        metrics.close()
    cluster.barrier("models evaluated")

    counts = _gathered_counts(cache, cluster)
    timings = _gathered_timings(timer, timed_stages(search.settings), cluster)
    if not cluster.is_main:
        return None
    reader = ReadOnlyCache(cache.root)
    results: list[Evaluated] = []
    for position, unit in enumerate(units):
        results += evaluated[position] if position in evaluated else search.read(reader, unit)

    table = pd.concat([r.rows for r in results], ignore_index=True)
    table["tokenizer"] = config.postgen.tokenizer
    table["filter0"] = space.filter0  # which positions the filter0 columns keep (tiers.FILTER0_SEMANTICS)
    postgen_names = metrics.names
    models = [r.model for r in results]
    left_out = left_out_models(models, config.pregen.degenerate)
    start = time.perf_counter()
    findings = findings_rows(table, [(m.architecture, m.run, m.epoch) for m in models if m.label not in left_out])
    late = LateSteps()  # from here on a step that fails or does not apply loses nothing else (pipeline.late)
    group_by = config.pregen.group_by or None
    result = late.run("ranking", lambda: ranking.rank(findings, postgen_names, space.names, group_by=group_by),
                      default=None) or ranking.empty_ranking(group_by)
    for why in result.excluded_postgen.values():
        print(f"warning: {why}; left out of the ranking (report.md, excluded.tsv)", file=sys.stderr)
    for post, why in result.rows_left_out.items():
        print(f"note: {post}: {why} (report.md, excluded.tsv)", file=sys.stderr)
    timings["ranking"] = time.perf_counter() - start
    assert list(table.columns[:len(ID_COLUMNS)]) == list(ID_COLUMNS)
    facts = dict(data.facts, tokenizer=SEARCH_TOKENIZERS[config.postgen.tokenizer],
                 units=config.pregen.units, space=len(space))
    timings["total"] = time.perf_counter() - wall
    lengths = np.zeros((len(data.test), max(len(refs) for refs in data.test.captions)), np.int32)
    for i, refs in enumerate(data.test.captions):
        lengths[i, :len(refs)] = [len(ref) + 1 for ref in refs]
    return SearchResult(out, table, result, postgen_names, metrics.unavailable, timings, facts,
                        models, counts, data.vocab, lengths,
                        dataclasses.replace(data.references, units=config.pregen.units), left_out, late)


def _evaluate_mine(search: Search, units: list, mine: list[int], cache: StageCache, pool: PostgenPool,
                   timer: StageTimer, trainers: int = 1, hold_postgen: bool = False) -> dict[int, list[Evaluated]]:
    """Run the flow on this process's units in order: its main parts here (train, decode; then the
    pre-gen sweep), its worker part in the pool, so that each model is scored while the next trains.
    Up to ``trainers`` units train at once, ahead, in threads (``trainers``).

    ``hold_postgen``: the trainers fill every core (``trainers_fill_cores``), so post-gen jobs are
    held until fewer units are left to train than there are trainers (a core is free), then
    handed to the pool in order: beside busy trainers a job would take the cores they use and
    2-3x its own time; from then on it has a core to itself while the last units train and
    decode. Units that do not train (ready-made models, trainings finished in the cache) hold
    nothing. (The workers' JVMs still start at once.)

    Finished post-gen jobs are taken up (their last part, their rows) in model order between
    units, and all of them at the end.
    """
    evaluated: dict[int, list[Evaluated]] = {position: [] for position in mine}
    pending: collections.deque = collections.deque()
    held: collections.deque = collections.deque()
    ctx = search.context(cache, timer)

    def take_up(block: bool) -> None:
        while pending and (block or pending[0][-1].done()):
            position, model, future = pending.popleft()
            if not future.done():
                with timer(WAITING):
                    scored = future.result()
            else:
                scored = future.result()
            for label, seconds in scored.seconds.items():
                timer.add(label, seconds)
            cache.merge(scored.counts)
            flow.merge(model, scored.model)
            while not model.finished:
                flow.advance(model, ctx)
            evaluated[position].append(search.rows(model))

    def hand_over() -> None:
        """The held post-gen jobs to the pool, in order."""
        while held:
            position, model = held.popleft()
            pending.append((position, model, pool.submit(model)))

    ctx = dataclasses.replace(ctx, stop=threading.Event())
    trains = [_will_train(units[position]) for position in mine]
    if any(trains):
        pool.warm()  # a model will train, so post-gen will run: its JVMs start while it trains
    trained_after = np.cumsum(trains[::-1])[::-1].tolist()[1:] + [0]  # units that train after each
    with started_in_order([units[position] for position in mine], lambda unit: flow.start_unit(unit, ctx), trainers,
                          ctx.stop) as started:
        for index, models in tqdm(started, total=len(mine), desc="models", unit="unit",
                                  disable=bar_disabled(search.settings.progress)):
            core_free = not hold_postgen or trained_after[index] < trainers  # a trainer has no unit left
            if core_free:
                hand_over()  # the workers start on these while this thread decodes
            for model in models:
                flow.advance(model, ctx)  # reference probabilities and captions, on this process's devices
                held.append((mine[index], model))
                if core_free:
                    hand_over()
                take_up(block=False)
    hand_over()
    take_up(block=True)
    return evaluated


def _will_train(unit) -> bool:
    """Whether a unit trains in this run (a training job not finished in the cache)."""
    return isinstance(unit, sources.TrainingJob) and not unit.entry.done


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
    names = flow.STAGE_NAMES
    local = np.array([mine.get(stage, {}).get(kind, 0) for stage in names for kind in ("computed", "reused")])
    total = cluster.sum(local).astype(int).reshape(len(names), 2)
    return {stage: {"computed": int(c), "reused": int(r)} for stage, (c, r) in zip(names, total)
            if stage in mine or c or r}
