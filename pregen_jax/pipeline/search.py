"""The search: models -> reference probabilities, captions -> strata -> post-gen and all
pre-gen metrics per stratum -> the table -> correlations, report and plots.

Every per-model stage is cached in the run folder under a key made of the content hashes of
its inputs (checkpoint, test data, settings), so an interrupted run resumes where it stopped
and a finished one re-renders its report in seconds.
"""
from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from .. import atomic, checkpoints, postgen, ranking, tables, tiers
from ..datasets import TOKENIZER, TOKENIZER_NAME
from ..refprobs import compute_ref_probs, generate_captions
from ..strata import spec_strata
from ..types import RefProbs
from . import models as sources
from .config import SearchConfig

ID_COLUMNS = ["dataset", "architecture", "run", "epoch", "num_strata", "stratum"]
SHARED_STOPWORDS = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "wmd" / "stopwords_nltk_english.txt"


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


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:16]


@dataclasses.dataclass
class SearchResult:
    out: Path
    table: pd.DataFrame
    ranking: ranking.Ranking
    postgen_names: list[str]
    unavailable: dict[str, str]
    timings: dict[str, float]
    facts: dict


def stopwords_for(config: SearchConfig) -> tuple[frozenset, str]:
    if config.postgen.stopwords:
        return postgen.read_stopwords(config.postgen.stopwords), config.postgen.stopwords
    if SHARED_STOPWORDS.is_file():
        return postgen.read_stopwords(SHARED_STOPWORDS), f"{SHARED_STOPWORDS} (the 2018 list)"
    return frozenset(), "none (no stop-word file configured and ../shared/data/wmd is absent)"


def run_search(config: SearchConfig, out, progress: bool = True) -> SearchResult:
    out = Path(out)
    timer = StageTimer()
    wall = time.perf_counter()
    with timer("data and image features"):
        dataset, facts = sources.load_data(config, progress)
        test = dataset["test"]
        test.check(f"{facts['dataset']} test split")
        vocab = sources.vocabulary(config, dataset)
    facts.update(vocabulary=len(vocab), tokenizer=TOKENIZER, test_images=len(test))
    with timer("training"):
        candidates = sources.precomputed_candidates(config, len(test))  # bad input fails before any write
        out.mkdir(parents=True, exist_ok=True)
        vocab.save(out / "vocabulary.json")  # what [models] checkpoints + vocabulary need to reuse the models
        if config.models.checkpoints:
            candidates += sources.checkpoint_candidates(config, vocab)
        elif not config.precomputed:
            candidates += sources.trained_candidates(config, dataset, vocab, out, progress)
    if not candidates:
        raise ValueError("no models to evaluate (configure [models], checkpoints or [[precomputed]])")

    stopwords, stopwords_source = stopwords_for(config)
    facts["wmd_stopwords"] = stopwords_source
    space = tiers.COMPAT_2018 if config.pregen.compat_2018 else tiers.DEFAULT_SPACE
    data_hash = test.content_hash()
    gts = {image_id: [" ".join(ref) for ref in refs] for image_id, refs in zip(test.image_ids, test.captions)}
    metric_set = None
    frames = []
    try:
        for candidate in tqdm(candidates, desc="models", unit="model", disable=not progress):
            folder = out / "models" / candidate.label
            folder.mkdir(parents=True, exist_ok=True)
            model_hash = (checkpoints.fingerprint(candidate.trained.path) if candidate.trained
                          else _key(_array_hash(candidate.ref_probs), candidate.captions))

            with timer("reference probabilities"):
                ref_probs = candidate.ref_probs or _cached_ref_probs(candidate, folder, _key(model_hash, data_hash),
                                                                     test.features, test.captions, vocab, progress)
            with timer(f"generation (beam {config.generation.beam_width})"):
                captions = candidate.captions or _cached_captions(candidate, folder, _key(
                    model_hash, data_hash, dataclasses.asdict(config.generation)), test.features, vocab, config, progress)
            res = {image_id: [" ".join(c)] for image_id, c in zip(test.image_ids, captions)}

            post_key = _key(model_hash, data_hash, captions, config.postgen.metrics, sorted(stopwords))
            post_path = folder / f"postgen-{post_key}.tsv"
            with timer("post-gen metrics"):
                if post_path.is_file():
                    post = pd.read_csv(post_path, sep="\t")
                else:
                    if metric_set is None:
                        metric_set = postgen.make_metrics(config.postgen.metrics, stopwords,
                                                          config.postgen.corenlp_dir or None)
                        for name, why in metric_set.unavailable.items():
                            tqdm.write(f"{name} unavailable: {why}")
                    _, per_image_cider = postgen.CIDEr().compute_score(gts, res)
                    strata = spec_strata(per_image_cider)
                    post = postgen.score_strata(metric_set, gts, res, strata.blocks(test.image_ids))
                    post.insert(0, "stratum", strata.stratum)
                    post.insert(0, "num_strata", strata.num_strata)
                    with atomic.atomic_path(folder / f"strata-{post_key}.npy") as tmp:
                        np.save(tmp, strata.mask)
                    tables.write_tsv_atomic(post, post_path)  # written last: it marks the stage done
            strata_mask = np.load(folder / f"strata-{post_key}.npy")

            with timer("pre-gen sweep (504 metrics x 15 strata)"):
                pre_path = folder / f"pregen-{_key(post_key, space.names, config.pregen.compat_2018)}.npy"
                if pre_path.is_file():
                    pre = np.load(pre_path)
                else:
                    pre = tiers.sweep(ref_probs, strata_mask, space)
                    with atomic.atomic_path(pre_path) as tmp:
                        np.save(tmp, pre)
            ids = pd.DataFrame({"dataset": dataset.name, "architecture": candidate.architecture,
                                "run": candidate.run, "epoch": candidate.epoch or "final"}, index=post.index)
            frames.append(pd.concat([ids, post, pd.DataFrame(pre, columns=space.names, index=post.index)], axis=1))
    finally:
        if metric_set is not None:
            metric_set.close()

    table = pd.concat(frames, ignore_index=True)
    table["tokenizer"] = TOKENIZER_NAME
    # From availability, not from the metric set: a run served from the cache starts no metric.
    unavailable = {n: why for n, (ok, why) in postgen.availability(config.postgen.corenlp_dir or None).items()
                   if n in config.postgen.metrics and not ok}
    postgen_names = [c for c in postgen.METRICS if c in table.columns]
    with timer("ranking"):
        result = ranking.rank(table, postgen_names, space.names, group_by=config.pregen.group_by or None)
    timings = dict(timer.seconds, total=time.perf_counter() - wall)
    return SearchResult(out, table, result, postgen_names, unavailable, timings, facts)


def _array_hash(ref_probs: RefProbs) -> str:
    digest = hashlib.sha256()
    for array in (ref_probs.probs, ref_probs.ranks, ref_probs.mask):
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def _cached_ref_probs(candidate, folder: Path, key: str, features, captions, vocab, progress) -> RefProbs:
    path = folder / f"refprobs-{key}.npz"
    if path.is_file():
        return RefProbs.load(path)
    trained = candidate.trained
    ref_probs = compute_ref_probs(trained.model, trained.params, features, captions, vocab, progress=progress,
                                  source=f"{candidate.label} on the test references")
    with atomic.atomic_path(path) as tmp:
        ref_probs.save(tmp)
    return ref_probs


def _cached_captions(candidate, folder: Path, key: str, features, vocab, config, progress) -> list[list[str]]:
    path = folder / f"captions-{key}.txt"
    if path.is_file():
        return [line.split() for line in path.read_text().splitlines()]
    gen = config.generation
    trained = candidate.trained
    captions = generate_captions(trained.model, trained.params, features, vocab, gen.beam_width, gen.max_len,
                                 gen.min_len, progress=progress)
    tables.write_text_atomic("".join(" ".join(c) + "\n" for c in captions), path)
    return captions
