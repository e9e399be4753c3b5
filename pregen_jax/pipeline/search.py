"""The search: data -> models -> per model (reference probabilities, captions, strata,
post-gen and pre-gen metrics per stratum) -> the table -> the ranking.

Inputs are all checked before the first model trains; every per-model stage is cached in
``<out>/cache`` (see ``cache``), so an interrupted run resumes where it stopped and a finished
one re-renders its report in seconds. Nothing but ``cache/`` is written here: ``report``
publishes the outputs.
"""
from __future__ import annotations

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
            self.seconds[stage] = self.seconds.get(stage, 0.0) + time.perf_counter() - start


@dataclasses.dataclass
class ModelResult:
    """What the search learned about one model, besides its table rows."""

    label: str
    architecture: str
    run: str
    epoch: str
    per_image: dict[str, np.ndarray]   # post-gen metric -> f[I] per-image scores on the whole test set
    quality: dict                      # caption_quality(): distinct share, repeats, problems


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


def run_search(config: SearchConfig, out, progress: bool = True) -> SearchResult:
    out = io.check_out_folder(out)
    timer = StageTimer()
    wall = time.perf_counter()
    with timer("data and image features"):
        data = sources.load_data(config, progress)
        space = stages.tier_space(config.pregen)
        # Everything a user supplied is read and checked here, before anything is trained or written.
        candidates = sources.precomputed_candidates(config, data)
        candidates += sources.checkpoint_candidates(config, data)
    cache = StageCache(out / "cache")
    with timer("training"):
        if not config.precomputed and not config.models.checkpoints:
            candidates += sources.trained_candidates(config, data, cache, progress)
    if not candidates:
        raise ValueError("no models to evaluate (configure [models], checkpoints or [[precomputed]])")

    metrics = stages.LazyMetrics(config.postgen, data)
    for name, why in metrics.unavailable.items():
        tqdm.write(f"{name} unavailable: {why}")
    space_id = stages.space_key(space)
    frames, models = [], []
    try:
        for candidate in tqdm(candidates, desc="models", unit="model", disable=not progress):
            with timer("reference probabilities"):
                ref_probs, ref_probs_key = stages.ref_probs_stage(cache, candidate, data, progress)
            with timer(f"generation (beam {config.generation.beam_width})"):
                captions, captions_key = stages.captions_stage(cache, candidate, data, config.generation, progress)
            with timer("post-gen metrics"):
                strata, strata_key = stages.strata_stage(cache, candidate, captions, captions_key, data)
                post, per_image = stages.postgen_stage(cache, candidate, captions, captions_key, strata, strata_key,
                                                       data, metrics)
            with timer(f"pre-gen sweep ({len(space)} metrics x {len(strata.mask)} strata)"):
                pre = stages.pregen_stage(cache, candidate, ref_probs, ref_probs_key, strata, strata_key, space,
                                          space_id)
            ids = pd.DataFrame({"dataset": data.dataset.name, "architecture": candidate.architecture,
                                "run": candidate.run, "epoch": candidate.epoch,
                                "num_strata": strata.num_strata, "stratum": strata.stratum})
            frames.append(pd.concat([ids, post, pd.DataFrame(pre, columns=space.names)], axis=1))
            models.append(ModelResult(candidate.label, candidate.architecture, candidate.run, candidate.epoch,
                                      per_image, stages.caption_quality(captions)))
    finally:
        metrics.close()

    table = pd.concat(frames, ignore_index=True)
    table["tokenizer"] = TOKENIZER_NAME
    postgen_names = metrics.names
    with timer("ranking"):
        result = ranking.rank(table, postgen_names, space.names, group_by=config.pregen.group_by or None)
    assert list(table.columns[:len(ID_COLUMNS)]) == list(ID_COLUMNS)
    facts = dict(data.facts, tokenizer=TOKENIZER, space=len(space))
    timings = dict(timer.seconds, total=time.perf_counter() - wall)
    lengths = np.zeros((len(data.test), max(len(refs) for refs in data.test.captions)), np.int32)
    for i, refs in enumerate(data.test.captions):
        lengths[i, :len(refs)] = [len(ref) + 1 for ref in refs]
    return SearchResult(out, table, result, postgen_names, metrics.unavailable, timings, facts, models,
                        cache.counts(), data.vocab, lengths)
