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

Assisted races were dropped in issue 41 (``ranking.racing.ASSIST_DROPPED``: prediction-powered
estimates have no confidence sequence valid at every look): ``RaceSettings.assist`` is "none" or
refused, and a candidate brings no teacher-forced pass (issue 29's assisted race lives on in
``experiments/model_selection/t_race.py``).
``RaceSettings.screen`` races only the candidates the prior ranks in its best ``screen`` share;
the rest are never decoded.

Exact where captions exist (issue 57). Where every candidate's captions are at hand (``lookup``: a
caption file, an in-memory list), scoring every image costs well under a millisecond an image and a
race saves nothing: ``select`` without settings scores every candidate on every image, picks the
best exactly (``ranking.verdicts.exact_result``), and gives ``evaluate``'s paired test beside it
(``exact.paired_on_new_images``). A race is for captions that must be made (a model decodes them, a
callback), or when settings (a budget) are given; a budget of 1 is always exact.
"""
from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from .. import postgen
from ..datasets import tokenize
from ..postgen import cider as cider_scorer
from ..ranking.racing import RaceResult, RaceSettings, prior_order, race, screen_size
from ..ranking.verdicts import exact_result
from .exact import paired_on_new_images


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One model in a race.

    generate: image indices (i64[n], positions in the split) -> n captions (strings or token
      lists), in that order.
    prior: a teacher-forced criterion, lower is better (NaN: unknown).
    """

    name: str
    generate: Callable[[np.ndarray], Sequence]
    prior: float = math.nan

    def captions_at_hand(self) -> bool:
        """Whether its captions exist already (a ``lookup``): scoring them all costs no decoding."""
        return isinstance(self.generate, Lookup)


@dataclasses.dataclass
class Selection:
    """A race's result with its cost in seconds: ``race`` is the ``RaceResult``, ``settings`` what
    it ran with; ``scores``: f64[M, I] every per-image score the race saw (NaN: not scored);
    ``paired``: where every model raced was scored on every image, ``evaluate``'s paired test of the
    pick against each (``exact.paired_on_new_images``), else None."""

    race: RaceResult
    metric: str
    seconds: dict[str, float]
    settings: RaceSettings = RaceSettings()
    scores: np.ndarray | None = None
    paired: object = None

    def whole_split_scores(self) -> np.ndarray:
        """f64[M]: each candidate's corpus score on the whole split where it was scored on every image
        (the mean of its per-image scores in split order: what ``evaluate`` gives), NaN elsewhere."""
        if self.scores is None:
            return np.full(len(self.race.table), np.nan)
        return np.array([row.mean() if not np.isnan(row).any() else np.nan for row in self.scores])


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


def select(candidates: Sequence[Candidate], references: Sequence[Sequence], metric: str = "CIDEr",
           settings: RaceSettings | None = None, options: dict | None = None) -> Selection:
    """Choose among ``candidates`` on a split whose image i has references ``references[i]`` (strings
    or token lists), on ``metric`` (``check_metric``): exactly, every candidate on every image, where
    ``settings`` are None and every candidate's captions are at hand (``lookup``) or the budget is 1;
    else by a race as ``settings`` say (default ``RaceSettings()``: its budget, confidence, seed and
    screen; validated when made). ``options``: ``postgen.PostgenOptions`` fields for toolkit metrics.

    >>> refs = [["a red ball"], ["a blue cube"]] * 20
    >>> good = Candidate("good", lookup(["a red ball", "a blue cube"] * 20))
    >>> poor = Candidate("poor", lookup(["a cube", "a ball"] * 20))
    >>> selection = select([good, poor], refs, "CIDEr", RaceSettings(budget=1.0))
    >>> selection.race.table["candidate"][selection.race.picked]
    'good'
    """
    check_metric(metric)
    exact = settings is None and all(c.captions_at_hand() for c in candidates)
    return race_candidates(candidates, references, metric, settings or RaceSettings(), options, exact=exact)


def race_candidates(candidates: Sequence[Candidate], references: Sequence[Sequence], metric: str,
                    settings: RaceSettings, options: dict | None = None, idf_from: dict | None = None,
                    tokenized: bool = False, complete: bool = False, exact: bool = False) -> Selection:
    """``select`` for a caller that has checked ``metric`` already (``run_select``, before its work).

    ``idf_from``: the references whose document frequencies CIDEr-D takes (default ``references``),
    key -> that image's references, image i of the race under key i (a references file's every
    image, in its order, where the race is on the images the captions cover);
    ``tokenized``: references and captions are token lists of the caller's tokenizer, scored as
    they are (else strings are re-tokenized by the package tokenizer); ``complete``: after the race,
    score every raced candidate on the images the race left out (``--budget 1`` pays for that), so
    that ``Selection.whole_split_scores`` has each one's whole-split score; ``exact`` (or a budget of 1):
    no race, every candidate raced scored on every image (``ranking.verdicts.exact_result``), with
    ``evaluate``'s paired test of the pick against each (``Selection.paired``)."""
    if not candidates:
        raise ValueError("no candidates to select from")
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        raise ValueError(f"candidate names repeat: {sorted({n for n in names if names.count(n) > 1})}")
    all_gts = {i: [_as_text(r) for r in refs] for i, refs in enumerate(references)}
    idf_gts = all_gts if idf_from is None else {i: [_as_text(r) for r in refs] for i, refs in idf_from.items()}
    seconds = {"generate": 0.0, "score": 0.0}
    seen = np.full((len(candidates), len(references)), np.nan)

    def score_images(c: int, images: np.ndarray) -> np.ndarray:
        start = time.perf_counter()
        captions = list(candidates[c].generate(np.asarray(images)))
        seconds["generate"] += time.perf_counter() - start
        if len(captions) != len(images):
            raise ValueError(f"candidate {names[c]}: generate gave {len(captions)} captions for {len(images)} images")
        start = time.perf_counter()
        gts = {int(i): all_gts[int(i)] for i in images}
        res = {int(i): [_as_text(caption)] for i, caption in zip(images, captions)}
        idf = {"idf_from": idf_gts} if metric == "CIDEr" else {}
        _, per_image = postgen.score(metric, gts, res, **idf, tokenizer="none" if tokenized else "alnum-lower",
                                      **(options or {}))
        seconds["score"] += time.perf_counter() - start
        seen[c, np.asarray(images)] = per_image
        return np.asarray(per_image, np.float64)

    prior = np.array([c.prior for c in candidates], np.float64)
    keep = None if settings.screen is None else screen_size(len(candidates), settings.screen)
    racing = [int(c) for c in prior_order(prior)[:keep]]  # the candidates race() will race
    if exact or settings.budget >= 1:  # every image of every model: nothing left for a race to save
        for c in racing:
            score_images(c, np.arange(len(references)))
        result = exact_result(seen, prior, names, racing)
    else:
        result = race(score_images, len(candidates), len(references), settings, prior, names, None, keep,
                      score_range=score_range(metric, all_gts, idf_gts, tokenized))
    if complete:
        for c in racing:
            missing = np.flatnonzero(np.isnan(seen[c]))
            if len(missing):
                score_images(c, missing)
    paired = (paired_on_new_images(seen, names, result.picked, racing)
              if not np.isnan(seen[racing]).any() and len(racing) > 1 else None)
    return Selection(result, metric, seconds, settings, seen, paired)


def score_range(metric: str, gts: dict, idf_gts: dict, tokenized: bool = False) -> tuple[float, float]:
    """The per-image scores a race on ``metric`` can see on the images of ``gts`` (the registry's range;
    for CIDEr-D its highest score on any of these images, from their references alone:
    ``postgen.cider.score_bound``, a third or so below 10 with five references, which makes the
    drops' bets larger). The largest bound over the split, not over the images not yet drawn: valid
    at every draw, and as tight until the race has drawn most of the split. ``tokenized``: the
    references are scored as they are (else as ``postgen.score`` tokenizes them)."""
    low, high = postgen.REGISTRY[metric].score_range
    if metric != "CIDEr" or not gts:
        return low, high
    refs = [list(r) if tokenized else postgen.tokenized(list(r)) for r in idf_gts.values()]
    corpus = cider_scorer.Corpus.build(refs, [], [])
    position = {key: k for k, key in enumerate(idf_gts)}
    bound = cider_scorer.score_bound(corpus)[[position[key] for key in gts]]
    return low, min(high, float(bound.max()) * (1 + 1e-9))  # float slack: the scorer's sums in another order


@dataclasses.dataclass(frozen=True)
class Lookup:
    """``generate`` for a model that exists only as captions (``captions[i]``: image i's): each image
    asked for still counts as scored, but nothing is decoded."""

    captions: Sequence

    def __call__(self, images: np.ndarray) -> list:
        return [self.captions[int(i)] for i in images]


def lookup(captions: Sequence) -> Callable[[np.ndarray], list]:
    """``generate`` for a model that exists only as captions (one per image of the split)."""
    return Lookup(captions)


def race_signature(metric: str, tokenizer: str, references) -> str:
    """How a race's scores are computed (``postgen.signature``): the array backend, CIDEr-D's document
    frequencies from every image of the split (each image scored gets its whole-split score)."""
    from ..postgen.signature import refs_per_image, signature
    return signature(metric, tokenizer=tokenizer, nrefs=refs_per_image(dict(enumerate(references))),
                     backend="native", idf_from="all")
