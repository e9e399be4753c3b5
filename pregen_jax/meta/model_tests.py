"""`pregen-search unit-tests`: MUTT-style unit tests of the pre-gen metrics of a finished search.

For every model of the search the model is corrupted (``model_corruptions``) and every
pre-gen metric of the search's space is computed on the corrupted model in one sweep over the
whole test set (one stratum); a metric passes a trial when it reacts as CIDEr does. The
unchanged model's scores are recomputed the same way, so both sides of a trial come from one
code path. Per-model results are cached in ``<out>/cache/unit_tests/``, keyed by the model
file, the test split, the space and the settings, so a rerun only re-renders.
"""
from __future__ import annotations

import dataclasses
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from .. import io, tiers
from ..datasets import TOKENIZER_NAME
from . import model_corruptions as mc

COLUMNS = ("test", "kind", "pregen", "trials", "passed", "accuracy", "tokenizer")


@dataclasses.dataclass(frozen=True)
class TestedSearch:
    """A finished search (``pipeline.finished.FinishedSearch``) as the unit tests read it.

    Attributes:
      run: the run folder's reader.
      models: the whole-test-set rows of its table, one per model, with ``run`` and ``epoch`` as strings.
      correlations: its CIDEr ranking (best R^2 first).
      direction: pre-gen name -> +1 or -1, the sign of its R with CIDEr in the search (metrics
        the search left out of the ranking are absent: they have no direction).
    """

    run: object
    models: pd.DataFrame
    correlations: pd.DataFrame
    direction: dict[str, float]

    @property
    def folder(self) -> Path:
        return self.run.folder

    @property
    def config(self):
        return self.run.config


def _as_id(value) -> str:
    """A table id cell as the search wrote it (read_table turns "1" into 1.0)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def read_search(folder) -> TestedSearch:
    """Open ``folder`` as a finished search (its manifest checked) and take its model rows and CIDEr ranking."""
    from ..pipeline.finished import FinishedSearch
    run = FinishedSearch.open(folder)
    if "CIDEr" not in run.correlations:
        raise ValueError(f"--search {run.folder}: the search has no CIDEr ranking (post-gen metrics: "
                         f"{', '.join(run.postgen)}); the unit tests compare each metric with CIDEr")
    models = run.model_rows
    models["run"], models["epoch"] = models["run"].map(_as_id), models["epoch"].map(_as_id)
    return TestedSearch(run, models, run.correlations["CIDEr"], run.direction("CIDEr"))


@dataclasses.dataclass(frozen=True)
class ModelFile:
    """One model of the search that can be corrupted."""

    architecture: str
    run: str
    epoch: str
    path: Path | None

    @property
    def label(self) -> str:
        from ..pipeline.config import model_label
        return model_label(self.architecture, self.run, self.epoch)


def model_files(search: TestedSearch) -> tuple[list[ModelFile], list[str]]:
    """The model file of every table model, in table order, and one-line notes on those skipped.

    Where each model's parameters are is what the search's manifest records; precomputed
    models have none and are skipped.
    """
    entries = {(m.architecture, m.run, m.epoch): m for m in search.run.models}
    files, notes = [], []
    for row in search.models.itertuples():
        key = (str(row.architecture), row.run, row.epoch)
        entry = entries.get(key)
        if entry is not None and entry.source == "precomputed":
            notes.append(f"{key[0]}-{key[1]}: precomputed outputs, no parameters to corrupt: skipped")
            continue
        path = entry.files.get("model") if entry is not None else None
        model = ModelFile(*key, None if path is None else search.folder / path)
        if model.path is None:
            raise ValueError(f"{search.folder}: the manifest records no parameters file for model {model.label}; "
                             "rerun the search")
        if not model.path.is_file():
            raise ValueError(f"{model.path}: the search's model {model.label} is missing (the cache was changed "
                             f"since the search ran: rerun pregen-search run on {search.folder})")
        files.append(model)
    return files, notes


@dataclasses.dataclass(frozen=True)
class CorruptionScores:
    """One model's pre-gen metrics (columns of the space, C) unchanged and corrupted.

    Attributes:
      base: f[C]; temperature: f[len(TEMPERATURES), C]; shuffled: f[C]; noise: f[len(NOISE_LEVELS), C].
      cider: f[1 + len(NOISE_LEVELS)], CIDEr of the beam captions at noise 0 then each level.
      cider_shuffled: CIDEr of the beam captions from shuffled features.
      greedy_unchanged: bool[len(TEMPERATURES)], whether greedy captions stayed the same at each T.
    """

    base: np.ndarray
    temperature: np.ndarray
    shuffled: np.ndarray
    noise: np.ndarray
    cider: np.ndarray
    cider_shuffled: float
    greedy_unchanged: np.ndarray

    def save(self, folder: Path) -> None:
        np.savez(folder / "scores.npz", **dataclasses.asdict(self))

    @classmethod
    def load(cls, folder: Path) -> CorruptionScores:
        with np.load(folder / "scores.npz") as npz:
            return cls(**{f.name: npz[f.name] for f in dataclasses.fields(cls)})


def score_corruptions(trained, data, space: tiers.Space, generation, seed) -> CorruptionScores:
    """Every corruption of one model: the pre-gen sweep (one stratum, all test images) and CIDEr,
    each through the search's flow (``pipeline.flow``) with the whole test set as the one stratum."""
    from ..pipeline import flow
    from ..pipeline.config import PostgenConfig, SearchConfig
    from ..pipeline.postgen_metrics import LazyMetrics
    from ..pipeline.sources import SearchModel
    from ..strata import Strata
    test = data.test
    whole = {"strata": (Strata(np.ones((1, len(test)), bool), np.array([1]), np.array([0])), "whole test set")}
    metrics = LazyMetrics(PostgenConfig(metrics=["CIDEr"]), data)

    def run(params, features, stages, beam_width=generation.beam_width) -> flow.ModelScores:
        on = data if features is test.features else _with_test_features(data, features)
        settings = flow.FlowSettings(SearchConfig(generation=dataclasses.replace(generation, beam_width=beam_width)),
                                     metrics, space, progress=False, warn_unknown=False)
        candidate = SearchModel(trained.model.arch, "unit-test", "final", "corrupted",
                              dataclasses.replace(trained, params=params))
        return flow.score_model(candidate, on, settings, only=stages, given=whole)

    def pregen(params, features) -> np.ndarray:
        return run(params, features, {"refprobs", "pregen"}).values["pregen"][0]

    def cider(params, features) -> float:
        return float(run(params, features, {"captions", "postgen"}).post["CIDEr"][0])

    def greedy(params):
        return run(params, test.features, {"captions"}, beam_width=1).values["captions"]

    params, features = trained.params, test.features
    shuffled = mc.shuffle_features(features, seed)
    scaled = [mc.scale_temperature(params, t) for t in mc.TEMPERATURES]
    noisy = [mc.add_param_noise(params, level, seed) for level in mc.NOISE_LEVELS]
    try:
        base_greedy = greedy(params)
        return CorruptionScores(
            base=pregen(params, features),
            temperature=np.stack([pregen(p, features) for p in scaled]),
            shuffled=pregen(params, shuffled),
            noise=np.stack([pregen(p, features) for p in noisy]),
            cider=np.array([cider(p, features) for p in (params, *noisy)]),
            cider_shuffled=np.float64(cider(params, shuffled)),
            greedy_unchanged=np.array([greedy(p) == base_greedy for p in scaled]))
    finally:
        metrics.close()


def _with_test_features(data, features: np.ndarray):
    """``data`` (its test split only) with other image features (the shuffled-images corruption)."""
    test = dataclasses.replace(data.test, features=features)
    return dataclasses.replace(data, dataset=dataclasses.replace(data.dataset, splits={"test": test}))


def model_seed(seed: int, label: str) -> list[int]:
    """The noise and shuffle seed of one model: the user's seed and a hash of the model's label."""
    return [seed, zlib.crc32(label.encode())]


# ------------------------------------------------------------------ trials


def trial_table(names: list[str], direction: dict[str, float], scores: list[CorruptionScores],
                models: pd.DataFrame) -> pd.DataFrame:
    """One row per (test, pre-gen metric): trials, passed, accuracy (percent).

    ``scores``: the corrupted models' scores (columns ``names``); ``models``: the search's
    model rows, for early_snapshot. Tests that need a direction (all but temperature) leave
    out the metrics the search did not rank.
    """
    names = list(names)
    sign = np.array([direction.get(n, np.nan) for n in names])
    ranked = np.isfinite(sign)
    counts: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if scores:
        base = np.stack([s.base for s in scores])                                       # [M, C]
        temp = np.stack([s.temperature for s in scores])                                # [M, T, C]
        ok = mc.holds(base[:, None], temp)
        counts["temperature"] = (np.full(len(names), ok.shape[0] * ok.shape[1]), ok.sum((0, 1)))
        ok = mc.gets_worse(base, np.stack([s.shuffled for s in scores]), sign)
        counts["shuffled_images"] = (np.full(len(names), len(scores)), ok.sum(0))
        levels = np.stack([np.concatenate([s.base[None], s.noise]) for s in scores])   # [M, L+1, C]
        cider = np.stack([s.cider for s in scores])                                      # [M, L+1]
        i, j = np.triu_indices(levels.shape[1], 1)
        counted, ok = mc.ordered_like(levels[:, i], levels[:, j], cider[:, i], cider[:, j], sign)
        counts["param_noise"] = (np.full(len(names), counted.sum()), ok.sum((0, 1)))
    pairs = snapshot_pairs(models, names)
    if pairs is not None:
        final, snap, c_final, c_snap = pairs
        counted, ok = mc.ordered_like(snap, final, c_snap, c_final, sign)
        counts["early_snapshot"] = (np.full(len(names), counted.sum()), ok.sum(0))
    rows = []
    for test, (trials, passed) in counts.items():
        keep = np.ones(len(names), bool) if test == "temperature" else ranked
        for c in np.flatnonzero(keep):
            rows.append({"test": test, "kind": mc.TESTS[test], "pregen": names[c], "trials": int(trials[c]),
                         "passed": int(passed[c]),
                         "accuracy": 100.0 * passed[c] / trials[c] if trials[c] else np.nan,
                         "tokenizer": TOKENIZER_NAME})
    return pd.DataFrame(rows, columns=list(COLUMNS))


def snapshot_pairs(models: pd.DataFrame, names: list[str]):
    """(final f[P, C], snapshot f[P, C], CIDEr final f[P], CIDEr snapshot f[P]) from the table's
    model rows, one pair per earlier snapshot of a model; None when the search kept none.
    Metrics missing from the table are NaN (their trials fail)."""
    final, snap = [], []
    keys = [c for c in ("dataset", "architecture", "run") if c in models.columns]
    for _, rows in models.groupby(keys, sort=False):
        last = rows[rows["epoch"] == "final"]
        for _, row in rows[rows["epoch"] != "final"].iterrows():
            if len(last):
                final.append(last.iloc[0])
                snap.append(row)
    if not final:
        return None

    def metrics(rows):
        return pd.DataFrame(rows).reindex(columns=names).to_numpy(np.float64)

    def cider(rows):
        return np.array([r["CIDEr"] for r in rows], np.float64)
    return metrics(final), metrics(snap), cider(final), cider(snap)


# ------------------------------------------------------------------ the command


@dataclasses.dataclass
class UnitTestRun:
    table: pd.DataFrame
    search: TestedSearch
    models: list[ModelFile]
    scores: list[CorruptionScores]
    notes: list[str]
    out: Path
    seconds: float
    cache_log: dict
    seed: int = 0

    @property
    def correlations(self) -> pd.DataFrame:
        return self.search.correlations


def run_unit_tests(search_folder, out, seed: int = 0, progress: Callable[[str], None] | None = None) -> UnitTestRun:
    """Corrupt every model of a finished search, test every pre-gen metric, write the outputs.

    With ``out`` the run folder itself, ``pregen_unit_tests.tsv`` and ``pregen_unit_tests.md``
    are added to it (the search's report then shows the pass rates); otherwise ``out`` gets
    ``pregen_unit_tests.tsv`` and ``report.md``. Bad input is a ValueError before any model runs.
    """
    from ..captioning import load_trained
    from ..pipeline import sources
    from ..pipeline.cache import Stage, StageCache
    from ..pipeline.space import space_key as find_space_key
    from ..pipeline.space import tier_space
    from ..settings import as_dict
    from ..training import checkpoints
    from .model_tests_report import write_unit_test_outputs
    start = time.perf_counter()
    out = io.check_out_folder(out)
    search = read_search(search_folder)
    data = sources.load_data(search.config, progress=False)
    saved = search.run.vocabulary
    if saved is None or saved.fingerprint() != data.vocab.fingerprint():
        raise ValueError(f"{search.folder / 'vocabulary.json'}: differs from the vocabulary config.toml builds; "
                         "the run folder was changed after the search")
    space = tier_space(search.config.pregen)
    files, notes = model_files(search)
    if not files:
        raise ValueError(f"{search.folder}: every model of the search is precomputed; nothing to corrupt")
    cache = StageCache(out / "cache")
    stage = Stage("unit_tests", 1)
    settings = {"temperatures": mc.TEMPERATURES, "noise_levels": mc.NOISE_LEVELS, "seed": seed,
                "generation": as_dict(search.config.generation)}
    test_key, space_key = data.split_key("test"), find_space_key(space)
    upstream = {m.label: (checkpoints.fingerprint(m.path), test_key, space_key) for m in files}
    # Every model not served by the cache must load before any work starts.
    trained = {m.label: load_trained(m.path, data.vocab) for m in files
               if not cache.entry(stage, m.label, settings, upstream[m.label]).done}
    io.claim_out_folder(out)
    scores = []
    for model in files:
        begin = time.perf_counter()

        def compute(model=model):
            return score_corruptions(trained[model.label], data, space, search.config.generation,
                               model_seed(seed, model.label))
        value, _ = cache.cached(stage, model.label, settings, upstream[model.label], compute,
                                lambda s, folder: s.save(folder), CorruptionScores.load)
        scores.append(value)
        if progress:
            progress(f"{model.label}: " + (f"{time.perf_counter() - begin:.1f} s" if model.label in trained
                                            else "cached"))
    table = trial_table(space.names, search.direction, scores, search.models)
    run = UnitTestRun(table, search, files, scores, notes, out, 0.0, cache.counts(), seed)
    run.seconds = time.perf_counter() - start
    write_unit_test_outputs(run, space.names)
    return run
