"""The per-model stages of a search, one function each, every one cached (see ``cache``):

    reference probabilities ─────────────────────────────┐
    captions ── strata (per-image CIDEr) ── post-gen ─────┼── pre-gen sweep ── table rows
                                                          │
Each takes the upstream values with their cache keys and returns its own value and key.
"""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .. import postgen, tiers
from ..captioning import generate_captions, reference_probs
from ..captioning.input_pipeline import reference_word_starts
from ..refprobs import RefProbs
from ..strata import Strata, spec_strata
from .cache import Stage, StageCache, digest
from .config import PostgenConfig, PregenConfig
from .sources import Candidate, Data

REFPROBS = Stage("refprobs", 1)
CAPTIONS = Stage("captions", 1)
STRATA = Stage("strata", 1)
POSTGEN = Stage("postgen", 1)
PREGEN = Stage("pregen", 1)


# ------------------------------------------------------------------ reference probabilities and captions


def ref_probs_stage(cache: StageCache, candidate: Candidate, data: Data, progress: bool, units: str = "word"
                    ) -> tuple[RefProbs, str]:
    """The model's probabilities of the test references (precomputed ones pass through), in
    ``units``: the model's tokens are cached; with a subword vocabulary, word units combine each
    word's pieces (``pieces``) and get their own key."""
    if candidate.ref_probs is not None:
        return candidate.ref_probs, candidate.key
    test = data.test
    trained = candidate.trained

    def compute():
        return reference_probs(trained.model, trained.params, test.features, test.captions, data.vocab,
                               progress=progress, source=f"{candidate.label} on the test references")
    value, entry = cache.cached(REFPROBS, candidate.label, None, (candidate.key, data.split_key("test")), compute,
                                lambda rp, folder: rp.save(folder / "refprobs.npz"),
                                lambda folder: RefProbs.load(folder / "refprobs.npz", allow_zero=True))
    return in_units(value, entry.key, data, units)


def in_units(ref_probs: RefProbs, key: str, data: Data, units: str) -> tuple[RefProbs, str]:
    """A model's token-level RefProbs of the test references in ``units``, and its key."""
    vocab = data.vocab
    if vocab.kind == "word":  # a token is a word: the two units are the same numbers (and the same key)
        return dataclasses.replace(ref_probs, units=units, vocabulary=vocab.name), key
    tokens = dataclasses.replace(ref_probs, units="token", vocabulary=vocab.name)
    if units == "token":
        return tokens, digest(key, "token")
    return tokens.to_words(reference_word_starts(data.test.captions, vocab)), digest(key, "word")


def captions_stage(cache: StageCache, candidate: Candidate, data: Data, generation, progress: bool
                   ) -> tuple[list[list[str]], str]:
    """The model's captions of the test images (precomputed ones pass through)."""
    if candidate.captions is not None:
        return candidate.captions, candidate.key
    trained = candidate.trained

    def compute():
        return generate_captions(trained.model, trained.params, data.test.features, data.vocab,
                                 generation.beam_width, generation.max_len, generation.min_len, progress=progress)

    def save(captions, folder):
        (folder / "captions.txt").write_text("".join(" ".join(c) + "\n" for c in captions), encoding="utf-8")

    def load(folder):
        return [line.split() for line in (folder / "captions.txt").read_text(encoding="utf-8").splitlines()]
    value, entry = cache.cached(CAPTIONS, candidate.label, dataclasses.asdict(generation),
                                (candidate.key, data.split_key("test")), compute, save, load)
    return value, entry.key


def caption_quality(captions: list[list[str]]) -> dict:
    """Signs of a degenerate model: few distinct captions, or a word repeated three times in a row."""
    distinct = len({" ".join(c) for c in captions}) / len(captions)
    stutter = sum(any(c[k] == c[k + 1] == c[k + 2] for k in range(len(c) - 2)) for c in captions) / len(captions)
    problems = []
    if distinct < 0.05:
        problems.append(f"only {distinct:.1%} of its captions are distinct")
    if stutter > 0.05:
        problems.append(f"{stutter:.1%} of its captions repeat a word three times in a row")
    return {"distinct_captions": distinct, "repeating_captions": stutter, "problems": problems}


# ------------------------------------------------------------------ strata and post-gen metrics


def gts_res(data: Data, captions) -> tuple[dict, dict]:
    """pycocoevalcap's (gts, res) of one caption per test image against the test references."""
    test = data.test
    gts = {image_id: [" ".join(ref) for ref in refs] for image_id, refs in zip(test.image_ids, test.captions)}
    res = {image_id: [" ".join(c)] for image_id, c in zip(test.image_ids, captions)}
    return gts, res


def strata_stage(cache: StageCache, candidate: Candidate, captions, captions_key: str, data: Data
                 ) -> tuple[Strata, str]:
    """The spec's 15 strata: test images sorted by their own CIDEr, cut into 1..5 blocks."""
    def compute():
        gts, res = gts_res(data, captions)
        _, per_image_cider = postgen.CIDEr().compute_score(gts, res)
        return spec_strata(per_image_cider)

    def save(strata, folder):
        np.savez(folder / "strata.npz", mask=strata.mask, num_strata=strata.num_strata, stratum=strata.stratum)

    def load(folder):
        with np.load(folder / "strata.npz") as npz:
            return Strata(npz["mask"], npz["num_strata"], npz["stratum"])
    value, entry = cache.cached(STRATA, candidate.label, {"max_k": 5}, (captions_key, data.split_key("test", False)),
                                compute, save, load)
    return value, entry.key


class LazyMetrics:
    """Post-gen metrics started on first use, so a run served from the cache starts no Java."""

    def __init__(self, config: PostgenConfig, data: Data):
        self.config = config
        self.data = data
        self.started: dict[str, postgen.PostgenMetric] = {}
        self._settings: dict[str, dict] = {}
        self.available = postgen.availability(config.options, config.metrics)

    @property
    def names(self) -> list[str]:
        return [name for name in self.config.metrics if self.available[name][0]]

    @property
    def unavailable(self) -> dict[str, str]:
        return {name: why for name, (ok, why) in self.available.items() if not ok}

    def __getitem__(self, name: str) -> postgen.PostgenMetric:
        if name not in self.started:
            metric = postgen.REGISTRY[name].factory(self.config.options)
            if postgen.REGISTRY[name].needs_images:
                metric.bind_images(self.data.test.image_ids, self.data.test.features, self.data.features_id)
            self.started[name] = metric
        return self.started[name]

    def settings(self, name: str) -> dict:
        """What besides the captions and references determines a metric's scores (worked out once per
        metric: it reads stop-word and scorer files, and is asked for every model)."""
        if name not in self._settings:
            self._settings[name] = self._find_settings(name)
        return self._settings[name]

    def _find_settings(self, name: str) -> dict:
        spec = postgen.REGISTRY[name]  # the metric declares what changes its scores
        found = spec.cache_settings(self.config.options)
        if spec.needs_images:
            found["images"] = self.data.split_key("test")
        return found

    def close(self) -> None:
        for metric in self.started.values():
            metric.close()


def postgen_stage(cache: StageCache, candidate: Candidate, captions, captions_key: str, strata: Strata,
                  strata_key: str, data: Data, metrics: LazyMetrics) -> tuple[pd.DataFrame, dict]:
    """Post-gen scores: (f[15 strata] per metric as a DataFrame, per-image scores f[I] per metric).

    Each metric is its own cache entry, so adding a metric to the config computes only it.
    """
    gts, res = gts_res(data, captions)
    blocks = strata.blocks(data.test.image_ids)
    columns, per_image = {}, {}
    for name in metrics.names:
        def compute(name=name):
            return metrics[name].score_blocks(gts, res, blocks)

        def save(value, folder):
            np.savez(folder / "scores.npz", strata=value[0], per_image=value[1])

        def load(folder):
            with np.load(folder / "scores.npz") as npz:
                return npz["strata"], npz["per_image"]
        (stratum_scores, image_scores), _ = cache.cached(
            POSTGEN, f"{candidate.label}-{name}", metrics.settings(name),
            (captions_key, strata_key, data.split_key("test", False)), compute, save, load)
        columns[name], per_image[name] = np.asarray(stratum_scores, float), np.asarray(image_scores, float)
    return pd.DataFrame(columns), per_image


# ------------------------------------------------------------------ pre-gen metrics


def tier_space(config: PregenConfig) -> tiers.Space:
    """The configured tier space: 504 metrics (2018 or paper semantics), plus the user's tier functions.

    ``modules`` are imported first (a module name, or a .py file), so that their
    ``@tiers.register_...`` decorators run; every added function is then checked.
    """
    for module in config.modules:
        _import_tiers(module)
    base = tiers.COMPAT_2018 if config.compat_2018 else tiers.DEFAULT_SPACE
    extra = {"filters": config.filters, "caption_scores": config.caption_scores,
             "image_aggregators": config.image_aggregators, "dataset_aggregators": config.dataset_aggregators}
    try:
        space = base.extend(**extra)
        for tier, names in zip((1, 2, 3, 4), extra.values()):
            for name in names:
                tiers.check(name, tier)
    except ValueError as err:
        raise ValueError(f"[pregen]: {err}") from None
    return space


def _import_tiers(module: str) -> None:
    try:
        if module.endswith(".py"):
            path = Path(module)
            if not path.is_file():
                raise ValueError(f"[pregen] modules: {path} not found")
            name = "pregen_user_tiers_" + re.sub(r"\W", "_", path.stem) + "_" + digest(str(path.resolve()))
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, path)
                loaded = importlib.util.module_from_spec(spec)
                sys.modules[name] = loaded
                spec.loader.exec_module(loaded)
        else:
            importlib.import_module(module)
    except ValueError:
        raise
    except Exception as err:  # a user's module may fail in any way: say which module, in one line
        raise ValueError(f"[pregen] modules: importing {module!r} failed ({type(err).__name__}: {err})") from None


def space_key(space: tiers.Space) -> str:
    """Identity of a space: its metric names and the code of every tier function in it."""
    def code(tier_fn):
        try:
            return inspect.getsource(tier_fn.fn) if tier_fn.fn is not None else tier_fn.name
        except (OSError, TypeError):
            return tier_fn.fn.__code__.co_code.hex()
    functions = [*space.filters, *space.caption_scores, *space.image_aggregators, *space.dataset_aggregators]
    return digest(space.names, [(f.tier, f.name, code(f)) for f in functions])


def pregen_stage(cache: StageCache, candidate: Candidate, ref_probs: RefProbs, ref_probs_key: str,
                 strata: Strata, strata_key: str, space: tiers.Space, space_id: str) -> np.ndarray:
    """Every metric of ``space`` on every stratum: f[15, C]."""
    value, _ = cache.cached(PREGEN, candidate.label, {"space": space_id}, (ref_probs_key, strata_key),
                            lambda: tiers.sweep(ref_probs, strata.mask, space),
                            lambda scores, folder: np.save(folder / "pregen.npy", scores),
                            lambda folder: np.load(folder / "pregen.npy"))
    return value
