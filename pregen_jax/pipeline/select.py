"""Choose the best of N models by racing (``ranking.racing``) on real post-gen scores.

Any model can race: a candidate is a name, a ``generate(image_indices) -> captions`` callable
(a model of this package decodes those images; a model of another framework calls itself; a
model that exists only as captions looks them up in its file) and optionally a prior, a
teacher-forced criterion such as the validation perplexity its training logged (lower is
better). Every image a candidate is asked about counts as decoded and scored, cached or not.

Scores are per image, with CIDEr's document frequencies from all the split's references
(``postgen.score(..., idf_from=all_gts)``), so each image scored gets its whole-split score and
the race's means estimate whole-split CIDEr without bias. Only metrics whose corpus score is
the mean of per-image scores can race: a paired difference of means is then a difference of
corpus scores.

Assists (``assist``, issue 29): a candidate may also bring ``pass_features``, one teacher-forced
pass over the whole split (``PassFeatures``: per-image log-perplexity and tier space). With
``assist`` "perplexity", "pregen" or "both" the race is assisted (``ranking.racing``: every
estimate prediction-powered, ``ranking.ppi``), and the pass's seconds are billed. ``screen``
races only the candidates the prior ranks in its best ``screen`` share; the rest are never
decoded.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from .. import postgen
from ..datasets import tokenize
from ..ranking import features as cheap
from ..ranking.racing import RaceResult, RaceSettings, prior_order, race, screen_size

SCREEN_KEEP = 0.5  # the share --screen keeps by default (see experiments/model_selection: screening)


@dataclasses.dataclass(frozen=True)
class PassFeatures:
    """A candidate's teacher-forced pass over the split, per image.

    log_perplexity: f[I]; space: f[I, C'] the tier space on single images, named by ``names``
    (``ranking.features``); seconds: what the pass and its sweep cost.
    """

    log_perplexity: np.ndarray
    space: np.ndarray
    names: tuple[str, ...]
    seconds: float = 0.0

    @classmethod
    def from_ref_probs(cls, ref_probs, seconds: float = 0.0) -> PassFeatures:
        """From any model's ``RefProbs`` on the split (word units for the tier space)."""
        start = time.perf_counter()
        space, names = cheap.image_tier_space(ref_probs)
        return cls(cheap.image_log_perplexity(ref_probs), space, tuple(names),
                   seconds + time.perf_counter() - start)


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One model in a race.

    generate: image indices (i64[n], positions in the split) -> n captions (strings or token
      lists), in that order.
    prior: a teacher-forced criterion, lower is better (NaN: unknown).
    pass_features: () -> ``PassFeatures`` on the split, called only for an assisted race (None:
      the candidate has no pass; it then races with zero features).
    """

    name: str
    generate: Callable[[np.ndarray], Sequence]
    prior: float = math.nan
    pass_features: Callable[[], PassFeatures] | None = None


@dataclasses.dataclass
class Selection:
    """A race's result with its cost in seconds: ``race`` is the ``RaceResult``."""

    race: RaceResult
    metric: str
    seconds: dict[str, float]
    assist: str = "none"


def mean_metrics() -> list[str]:
    """The registered post-gen metrics whose corpus score is the mean of per-image scores (the
    registry says so: BLEU and METEOR pool counts or statistics over the corpus instead)."""
    return [name for name, spec in postgen.REGISTRY.items() if spec.corpus_is_mean and not spec.needs_images]


def check_metric(metric: str) -> None:
    """Refuse metrics a race cannot use, with the reason."""
    allowed = mean_metrics()
    if metric in allowed:
        return
    if metric in postgen.REGISTRY:
        why = ("it reads the images, which a race over other splits does not bind" if postgen.REGISTRY[metric].needs_images
               else "its corpus score pools counts or statistics over all images, so it is not the mean of per-image "
                    "scores and paired per-image differences do not test it")
    else:
        why = "not a post-gen metric"
    raise ValueError(f"--metric {metric}: cannot race on it ({why}); choose from {', '.join(allowed)}")


def _as_text(caption) -> str:
    return " ".join(caption) if not isinstance(caption, str) else " ".join(tokenize(caption))


def assist_matrix(candidates: Sequence[Candidate], assist: str, racing: Sequence[int], num_images: int,
                  seconds: dict) -> np.ndarray | None:
    """f[M, I, C] features of ``assist`` for the candidates (zeros for those not raced or with no
    pass); None for "none". Adds the passes' seconds to ``seconds["pass"]``."""
    if assist == "none":
        return None
    found = {}
    for c in racing:
        if candidates[c].pass_features is None:
            continue
        one = candidates[c].pass_features()
        seconds["pass"] = seconds.get("pass", 0.0) + one.seconds
        if len(one.log_perplexity) != num_images:
            raise ValueError(f"candidate {candidates[c].name}: features for {len(one.log_perplexity)} images, "
                             f"the split has {num_images}")
        found[c] = cheap.assist_features(assist, one.log_perplexity, one.space, one.names)
    if not found:
        raise ValueError(f"assist {assist}: no candidate brings a teacher-forced pass")
    width = next(iter(found.values())).shape[1]
    out = np.zeros((len(candidates), num_images, width))
    for c, values in found.items():
        out[c] = values
    return out


def select(candidates: Sequence[Candidate], references: Sequence[Sequence], metric: str = "CIDEr",
           settings: RaceSettings = RaceSettings(), options: dict | None = None, assist: str = "none",
           screen: float | None = None) -> Selection:
    """Race ``candidates`` on a split whose image i has references ``references[i]`` (strings or
    token lists). ``options``: ``postgen.PostgenOptions`` fields for toolkit metrics.

    assist: "none", "perplexity", "pregen" or "both" (``ranking.features.ASSISTS``): the per-image
    features an assisted race predicts scores from. screen: race only this share of the
    candidates, those the prior ranks best (None: all).
    """
    check_metric(metric)
    if assist not in cheap.ASSISTS:
        raise ValueError(f"--assist {assist}: choose from {', '.join(cheap.ASSISTS)}")
    if not candidates:
        raise ValueError("no candidates to select from")
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    all_gts = {i: [_as_text(r) for r in refs] for i, refs in enumerate(references)}
    seconds = {"generate": 0.0, "score": 0.0}

    def score_images(c: int, images: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        captions = list(candidates[c].generate(np.asarray(images)))
        seconds["generate"] += time.perf_counter() - start
        if len(captions) != len(images):
            raise ValueError(f"candidate {names[c]}: generate gave {len(captions)} captions for {len(images)} images")
        start = time.perf_counter()
        gts = {int(i): all_gts[int(i)] for i in images}
        res = {int(i): [_as_text(caption)] for i, caption in zip(images, captions)}
        idf = {"idf_from": all_gts} if metric == "CIDEr" else {}
        _, per_image = postgen.score(metric, gts, res, **idf, **(options or {}))
        seconds["score"] += time.perf_counter() - start
        return np.asarray(per_image, np.float64)

    prior = np.array([c.prior for c in candidates], np.float64)
    keep = None if screen is None else screen_size(len(candidates), screen)
    racing = [int(c) for c in prior_order(prior)[:keep]]  # the candidates race() will race
    seconds["pass"] = 0.0
    features = assist_matrix(candidates, assist, racing, len(references), seconds)
    result = race(score_images, len(candidates), len(references), settings, prior, names, features, keep)
    return Selection(result, metric, seconds, assist)


def lookup(captions: Sequence) -> Callable[[np.ndarray], list]:
    """``generate`` for a model that exists only as captions (one per image of the split)."""
    return lambda images: [captions[int(i)] for i in images]


# ------------------------------------------------------------------ the models of a finished search


SPLITS = ("val", "test")


def logged_perplexity(path) -> float:
    """The validation perplexity training logged for a saved model (NaN when it logged none): a
    snapshot records its epoch's, a final model the history entry of the epoch it kept."""
    from ..training import checkpoints
    _, meta = checkpoints.load(path)
    if "val_perplexity" in meta:
        return float(meta["val_perplexity"])
    for record in meta.get("history", []):
        if record.get("epoch") == meta.get("epoch") and record.get("val_perplexity") is not None:
            return float(record["val_perplexity"])
    return math.nan


def _bucket(n: int) -> int:
    """The batch a round of ``n`` images is decoded in: the next power of two (at most 256), so
    that rounds of every size reuse a few compiled programs."""
    return min(256, 1 << max(n - 1, 1).bit_length())


def model_candidate(name: str, path, data, generation, split: str) -> Candidate:
    """A saved model of this package: decodes the asked images of ``split`` as the search did."""
    from ..captioning import generate_captions, load_trained
    trained = load_trained(path, data.vocab)
    features = data.dataset[split].features

    def generate(images):
        images = np.asarray(images)
        return generate_captions(trained.model, trained.params, features[images], data.vocab, generation.beam_width,
                                 generation.max_len, generation.min_len, batch_size=_bucket(len(images)),
                                 progress=False)

    def pass_features() -> PassFeatures:
        from ..captioning import reference_probs
        from ..captioning.input_pipeline import reference_word_starts
        start = time.perf_counter()
        captions = data.dataset[split].captions
        ref_probs = reference_probs(trained.model, trained.params, features, captions, data.vocab, progress=False,
                                    source=name, warn_unknown=False)
        if ref_probs.units != "word":
            ref_probs = ref_probs.to_words(reference_word_starts(captions, data.vocab))
        return PassFeatures.from_ref_probs(ref_probs, time.perf_counter() - start)
    return Candidate(name, generate, logged_perplexity(path), pass_features)


def search_candidates(run, data, split: str, checkpoints=()) -> tuple[list[Candidate], list[dict], list[str]]:
    """Candidates from a finished search (``FinishedSearch``) and extra checkpoint files.

    Returns (candidates, their identity rows: architecture, run, epoch, source; notes on models
    left out). A model that exists only as captions races on the test split by looking them up
    (each image still counts as scored); on the validation split it has no captions and is left out.
    """
    from .sources import precomputed_candidates
    candidates, ids, notes = [], [], []
    precomputed = ({(c.architecture, c.run): c.captions for c in precomputed_candidates(run.config, data)}
                   if split == "test" and run.config.precomputed else {})
    for model in run.models:
        label = f"{model.architecture}-{model.run}-{model.epoch}"
        path = model.files.get("model")
        if path is not None:
            candidates.append(model_candidate(label, run.folder / path, data, run.config.generation, split))
        elif (model.architecture, model.run) in precomputed:
            candidates.append(Candidate(label, lookup(precomputed[(model.architecture, model.run)])))
        else:
            notes.append(f"{label}: captions given ready-made, none for the {split} split: left out")
            continue
        ids.append({"architecture": model.architecture, "run": model.run, "epoch": model.epoch, "source": model.source})
    for k, path in enumerate(checkpoints):
        label = f"checkpoint-{k + 1}"
        candidates.append(model_candidate(label, path, data, run.config.generation, split))
        ids.append({"architecture": "checkpoint", "run": str(path), "epoch": "", "source": "checkpoint"})
    return candidates, ids, notes


def run_select(run, split: str, metric: str, settings: RaceSettings, checkpoints=(), progress: bool = True,
               assist: str = "none", screen: float | None = None):
    """``pregen-search select``: race a finished search's models (and ``checkpoints``) on ``split``.

    Returns (the select.tsv table, the ``Selection``, notes). On the test split the table also
    gives each model's whole-split score from the search (``search_score``) and the pick's regret,
    which checks the pick; those scores are never read by the race.
    """
    import pandas as pd

    from .sources import load_data
    if split not in SPLITS:
        raise ValueError(f"--split {split}: choose from {', '.join(SPLITS)}")
    check_metric(metric)
    data = load_data(run.config, progress, run_folder=run.folder)
    candidates, ids, notes = search_candidates(run, data, split, checkpoints)
    if not candidates:
        raise ValueError(f"{run.folder}: no model of the search can be decoded on the {split} split")
    # the run's stop words, jars...; never its backend: whole-split frequencies need the array CIDEr
    options = {k: v for k, v in dataclasses.asdict(run.config.postgen.options).items() if v and k != "backend"}
    selection = select(candidates, data.dataset[split].captions, metric, settings, options, assist, screen)
    race = selection.race.table.drop(columns=["candidate"])
    table = pd.concat([pd.DataFrame(ids), race], axis=1)
    if split == "test" and metric in run.postgen:
        whole = run.models_table
        whole = {(str(r.architecture), str(r.run), str(r.epoch)): getattr(r, metric) for r in whole.itertuples()}
        table["search_score"] = [whole.get((str(a), str(r), str(e)), math.nan)
                                 for a, r, e in zip(table["architecture"], table["run"], table["epoch"])]
    table["metric"] = metric
    table["assist"] = assist
    for key, value in selection.race.assist.items():  # the race's own: R^2, variance ratio, how many screened
        table[f"race_{key}"] = value
    table["split"] = split
    table["tokenizer"] = run.tokenizer
    return table, selection, notes


def summary_lines(table, selection: Selection, split: str) -> list[str]:
    """What select prints: the pick, its interval, the models it could not separate, the cost."""
    race = selection.race
    pick = table.iloc[race.picked]
    name = lambda row: f"{row['architecture']}-{row['run']}-{row['epoch']}"  # noqa: E731
    total = race.images_scored / race.cost if race.cost else 0
    lines = [f"picked {name(pick)}: {selection.metric} {pick['estimate']:.4f} "
             f"[{pick['low']:.4f}, {pick['high']:.4f}] on {int(pick['images_scored'])} {split} images "
             f"(interval at level {1 - 2 * race.alpha_per_test:.4f}, the race's corrected level)"]
    left = [name(table.iloc[c]) for c in race.not_separated]
    lines.append("not separated from it: " + (", ".join(left) if left else "none (every other model was dropped)"))
    lines.append(f"cost: {race.images_scored} images decoded and scored of {int(round(total))} "
                 f"({100 * race.cost:.1f}% of scoring every model on every image), "
                 f"{selection.seconds['generate']:.1f} s decoding, {selection.seconds['score']:.1f} s scoring, "
                 f"{selection.seconds.get('pass', 0.0):.1f} s teacher-forced passes (assist {selection.assist})")
    screened = [name(table.iloc[c]) for c in range(len(table)) if table.iloc[c]["status"] == "screened out"]
    if screened:
        lines.append(f"screened out before generation ({len(screened)} of {len(table)}, by the prior): "
                     + ", ".join(screened))
    if race.assist.get("r2_pairs") is not None and "variance_ratio_pairs" in race.assist:
        lines.append(f"assist {selection.assist}: cross-fitted R^2 {race.assist['r2_single']:.3f} (scores), "
                     f"{race.assist['r2_pairs']:.3f} (differences to the pick); variance ratio of those differences "
                     f"(plain over assisted, median) {race.assist['variance_ratio_pairs']:.3f}")
    if "search_score" in table and table["search_score"].notna().all():
        best = table["search_score"].max()
        regret = 100 * (best - pick["search_score"]) / best if best else 0.0
        lines.append(f"check against the search's whole-split {selection.metric}: the pick's is "
                     f"{pick['search_score']:.4f}, the best model's {best:.4f} (regret {regret:.2f}%)")
    return lines
