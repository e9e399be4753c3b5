"""``evaluate``: score COCO results files against references as ``COCOEvalCap`` does, and compare systems.

The steps are COCOEvalCap's: the images of the results (in REFS's order, ``inputs``), references
and captions tokenized (``tokenizers``; PTB by default), then every metric on the same ``gts`` and
``res``; the difference is that each metric gives per-image sufficient statistics
(``PostgenMetric.stats``), so the corpus score, the per-image scores, intervals and paired tests
all come from one pass (``significance``).
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import postgen
from ..captionfiles import ReferenceSet
from ..postgen.jvm import jvms_started
from ..postgen.recent import release_kept
from ..postgen.signature import refs_per_image, signature
from . import samples
from .checks import caption_checks, empty_caption_notes, input_notes
from .family import adjust_rows
from .inputs import IN_MEMORY, ResultsFile, references_given, results_given, scored_images, systems_given
from .results import Result
from .significance import Resampling, compare_rows, drawn_ahead
from .tokenizers import check_tokenizer, tokenize_all, tokenizer_label

if TYPE_CHECKING:
    import pandas as pd

COCO_METRICS = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr", "SPICE")  # COCOEvalCap's
IDF_RULES = ("scored", "all")


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """What ``score_files`` found.

    Attributes:
      compared: ``significance.compare_rows`` of the metrics with statistics: one dict per (system,
        metric), metric by metric; scores_only: {system, metric, score} of the metrics without them.
      scores: system -> metric -> f64[images] per-image scores; images: the image ids in scoring order.
      systems: the results files' names (the first is the baseline); metrics: the metrics scored, in order.
      tokenizer: the tokenizer's short name.
      settings: what the scores depend on (tokenizer, each metric's backend, versions, whether a
        JVM ran and which Java, document-frequency rule, ...).
      unavailable: metric -> why it could not run here (one line).
      notes: warnings to show the user (empty captions, intervals not available, ...).
      signatures: metric -> the line that pins how its scores were computed (``postgen.signature``).

    As tables (pandas loads on first use; ``pregen-search evaluate`` writes without it):
      table: one row per (system, metric): score, its 95% interval, and against the first system
        the difference, its interval and the two p-values (``significance.compare``), and the tokenizer.
      per_image: f64 scores, one row per (system, image) in scoring order: ``image_id``, one column
        per metric (``evalImgs``), ``system`` where there are several.
    """

    compared: list
    scores_only: list
    scores: dict
    images: list
    systems: list
    metrics: list
    tokenizer: str
    settings: dict
    unavailable: dict
    notes: list
    signatures: dict = dataclasses.field(default_factory=dict)

    def __str__(self) -> str:
        """The table ``pregen-search evaluate`` prints (``outputs.render``), then each metric's signature."""
        from .outputs import render
        return "\n".join([render(self), *self.signature_lines()])

    def signature_lines(self) -> list[str]:
        """One line per metric: ``signature: METRIC|...`` (sacreBLEU's idea: how the number was computed)."""
        return [f"signature: {self.signatures[m]}" for m in self.metrics if m in self.signatures]

    def rows(self) -> list[dict]:
        """``table``'s rows as dicts (a cell that does not apply is absent), in its order: metric by metric."""
        metric_order = {m: k for k, m in enumerate(self.metrics)}
        system_order = {s: k for k, s in enumerate(self.systems)}
        rows = sorted(self.compared + self.scores_only, key=lambda r: (metric_order[r["metric"]], system_order[r["system"]]))
        return [{**row, "tokenizer": self.tokenizer, "signature": self.signatures.get(row["metric"], "")}
                for row in rows]

    @property
    def results(self) -> list[Result]:
        """``rows()`` as objects: each score with its interval and tests (``results.Result``)."""
        return [Result.of_row(row) for row in self.rows()]

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        import pandas as pd

        from .significance import COLUMNS
        table = pd.DataFrame(self.compared, columns=COLUMNS) if self.compared else pd.DataFrame(columns=COLUMNS)
        if self.scores_only:
            table = pd.concat([table, pd.DataFrame(self.scores_only)], ignore_index=True)
            metric_order = {m: k for k, m in enumerate(self.metrics)}
            system_order = {s: k for k, s in enumerate(self.systems)}
            key = table["metric"].map(metric_order) * len(self.systems) + table["system"].map(system_order)
            table = table.iloc[np.argsort(key.to_numpy(), kind="stable")].reset_index(drop=True)
        return table.assign(tokenizer=self.tokenizer)

    @functools.cached_property
    def per_image(self) -> pd.DataFrame:
        import pandas as pd
        frames = []
        for system in self.systems:
            frame = pd.DataFrame({"image_id": self.images, **{m: self.scores[system][m] for m in self.metrics}})
            frames.append(frame.assign(system=system) if len(self.systems) > 1 else frame)
        return pd.concat(frames, ignore_index=True)


def evaluate(references, captions, *, names=None, split: str = "test", metrics=None, tokenizer: str | None = None,
             idf_from: str = "scored", seed: int = 0, resamples: int = 1000, trials: int = 10000,
             family: str = "all", corenlp_dir: str = "", stopwords: str = "", train_captions=None) -> Evaluation:
    """``pregen-search evaluate`` as a function, with its defaults: ``str()`` of the result is the
    table the command prints; ``.results`` the scores, intervals and tests as objects.

    ``references``: a file (COCO annotations, a Karpathy-split JSON, an ``export-references``
    JSONL) or a mapping image id -> reference strings; ``captions``: a results file or in-memory
    captions (image id -> caption, or a COCO results list), or a list of them (the first is the
    baseline the others are compared with); ``names``: the systems' names (default: the files'
    stems; ``captions``, ``captions_2``, ... for captions in memory). The other options are the
    command's (``--seed``, ``--resamples``, ``--trials``, ``--family``, ``--train-captions``, ...).
    """
    return score_files(references, captions, names=names, split=split, metrics=metrics, tokenizer=tokenizer,
                       idf_from=idf_from, plan=Resampling(resamples, trials, seed, family),
                       options=postgen.PostgenOptions(corenlp_dir=corenlp_dir, stopwords=stopwords), train_captions=train_captions)


def score_files(references, captions, *, names=None, split: str = "test", metrics=None, tokenizer: str | None = None,
                idf_from: str = "scored", plan: Resampling = Resampling(),
                options: postgen.PostgenOptions = postgen.PostgenOptions(), train_captions=None) -> Evaluation:
    """Score results files (or captions in memory) against references, COCOEvalCap's way.

    ``references``: a COCO annotation file, a Karpathy-split JSON (its ``split``) or an
    ``export-references`` JSONL, or a mapping image id -> reference strings; ``captions``: a
    results file or in-memory captions, or a list of them (the first is the baseline the others
    are compared with; ``evaluate``); ``metrics``: names (default: COCOEvalCap's set;
    SPICE left out with a note where it cannot run); ``tokenizer``: ``ptb`` (default),
    ``alnum-lower`` or ``none``; references an export wrote default to the tokenizer it records
    (``alnum-lower``: their strings are its tokens; ``ptb`` refused);
    ``idf_from``: CIDEr-D's document frequencies from the ``scored`` images (COCOEvalCap) or
    ``all`` images of REFS; ``plan``: bootstrap resamples, randomization trials, seed, the family
    of comparisons adjusted together.
    """
    refs = references_given(references, split)
    given = systems_given(captions)
    paths = [str(system) if isinstance(system, (str, Path)) else f"captions {k + 1} ({IN_MEMORY})"
             for k, system in enumerate(given)]
    tokenizer = tokenizer or refs.tokenizer or "ptb"  # an export's own tokenizer, applied to the captions too
    check_tokenizer(tokenizer, refs.tokenized, refs.path)
    if idf_from not in IDF_RULES:
        raise ValueError(f"--idf-from {idf_from}: choose from {', '.join(IDF_RULES)}")
    requested = list(metrics) if metrics else list(COCO_METRICS)
    _check_metrics(requested)
    systems = [results_given(system, refs, k) for k, system in enumerate(given)]
    samples.check_shapes(requested, systems)
    train = samples.read_training(requested, train_captions)
    names = _system_names(given, names)
    images = scored_images(refs, systems)
    for name, (ok, why) in postgen.metric_availability(options, requested).items():
        if metrics and not ok:  # asked for by name: not running it is an error (before any work), not a note
            raise ValueError(f"--metrics {name}: cannot run here ({why})")
    jvms_before = jvms_started()
    beside = [name for name in requested if name in postgen.REGISTRY and postgen.REGISTRY[name].releases_gil]
    # made first, apart, once the inputs are read: METEOR's own process loads (numba, its tables; on a
    # first run it compiles) while this one tokenizes, scores the other metrics and checks the captions' fit
    with postgen.make_metrics(beside, options, apart=True) as started:
        tokenizer_notes: list[str] = []
        gts, system_res, every_gts = _tokenized(refs, systems, images, tokenizer,
                                                idf_from == "all" or samples.wants_every_image(requested), tokenizer_notes)
        all_gts = every_gts if idf_from == "all" else None

        def meanwhile(ran: dict, stats: dict) -> tuple:
            """The captions' check, the bootstrap's draws and the comparison of the metrics scored here,
            while METEOR's process may still align (it waits for none of them; the check, 0.3 s at 5,000
            images with scipy's import, once ran before tokenizing and held METEOR's start back);
            METEOR's own comparison, after, reads the same draws."""
            fits = caption_checks(refs, systems, images)
            counts, here = drawn_ahead(len(images), plan), _with_stats(ran)
            compared = compare_rows(here, _stats_of(here, stats, names), plan, counts)
            _installed("pregen-jax"), _installed("pycocoevalcap")  # settings.json's, looked up now
            return fits, counts, compared
        scorers, unavailable, stats, per_image, corpus, (fits, counts, (compared, draws)) = _score_all(
            requested, options, started, all_gts, gts, system_res, names, meanwhile,
            samples.diversity_metrics(requested, every_gts, train and (train[0], tokenize_all(train[1], tokenizer))))
        notes = input_notes(refs, systems, images, fits) + empty_caption_notes(systems) + [
            f"{s.path}: image ids are Karpathy {s.keyed_by}" for s in systems if "matched to" in s.keyed_by
        ] + tokenizer_notes
        with_stats = _with_stats(scorers)
        nrefs = refs_per_image(gts)
        late = {name: metric for name, metric in with_stats.items() if name in beside}
        late_rows, late_draws = compare_rows(late, _stats_of(late, stats, names), plan,
                                             counts if isinstance(counts, list) else None)
        compared, draws = compared + late_rows, {**draws, **late_draws}
    order = {name: k for k, name in enumerate(scorers)}
    compared.sort(key=lambda row: order[row["metric"]])  # stable: each metric's systems stay in order
    family = adjust_rows(compared, draws, plan.family)  # every metric's comparisons at once: one family
    jvms = jvms_started() - jvms_before
    scores_only = [{"system": s, "metric": m, "score": float(corpus[s][m])} for m in scorers for s in names
                   if m in corpus[s]]
    if len(with_stats) < len(scorers):
        notes.append(f"no intervals or p-values for {', '.join(m for m in scorers if m not in with_stats)} "
                     "(they declare no per-image statistics: PostgenMetric.has_stats)")
    settings = _settings(refs, paths, names, tokenizer, idf_from, plan, scorers, unavailable, len(images), jvms)
    settings["captions_keyed_by"] = {name: system.keyed_by for name, system in zip(names, systems)}
    settings["captions_per_image"] = {name: system.per_image for name, system in zip(names, systems)}
    settings["document_frequencies"] = samples.document_frequencies(settings["document_frequencies"], list(scorers))
    per_image_label = samples.samples_label(systems)
    signatures = {name: samples.diversity_signature(name, metric, tokenizer=tokenizer, nrefs=nrefs, samples=per_image_label)
                  if name in postgen.DIVERSITY else
                  signature(name, tokenizer=tokenizer, nrefs=nrefs, backend=getattr(metric, "backend", None),
                            idf_from=idf_from) for name, metric in scorers.items()}
    settings["signatures"] = signatures
    settings["significance"]["family"] = family
    settings["misplaced_captions"] = {name: fit.summary() if fit is not None else None for name, fit in zip(names, fits)}
    return Evaluation(compared, scores_only, per_image, images, names, list(scorers), tokenizer, settings, unavailable,
                      notes, signatures)


def _with_stats(scorers: dict) -> dict:
    """The metrics (name -> metric) that give per-image statistics: compared with intervals and tests."""
    return {name: metric for name, metric in scorers.items() if metric.has_stats}


def _stats_of(metrics: dict, stats: dict, names: list[str]) -> dict:
    """system -> metric -> f64[images, k] of ``metrics``, from ``_score``'s statistics."""
    return {system: {name: stats[system][name] for name in metrics} for system in names}


@functools.cache
def _installed(package: str) -> str:
    """The installed version of ``package`` ("absent"): looked up once (reading the installed
    packages' metadata takes tens of milliseconds), while METEOR's process still aligns."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version(package)
    except PackageNotFoundError:
        return "absent"


def _check_metrics(requested: list[str]) -> None:
    postgen.check_metric_names([name for name in requested if name not in postgen.DIVERSITY], "--metrics")
    for name in requested:
        if name in postgen.REGISTRY and postgen.REGISTRY[name].needs_images:
            raise ValueError(f"--metrics {name}: reads the images, which evaluate does not have (text files only)")
    if len(set(requested)) != len(requested):
        raise ValueError(f"--metrics names a metric twice: {', '.join(requested)}")


def _system_names(systems: list, names=None) -> list[str]:
    """Each system's name in tables: ``names`` where given, else a results file's stem (its path where
    stems repeat), ``captions`` (``captions_2``, ...) for captions in memory."""
    if names is not None:
        names = [str(n) for n in names]
        if len(names) != len(systems) or len(set(names)) != len(names):
            raise ValueError(f"names: {len(systems)} distinct names needed, one per system (got {names})")
        return names
    paths = [s if isinstance(s, (str, Path)) else None for s in systems]
    stems = [Path(p).stem if p is not None else "captions" if k == 0 else f"captions_{k + 1}"
             for k, p in enumerate(paths)]
    names = stems if len(set(stems)) == len(stems) else [str(p) if p is not None else stem
                                                          for p, stem in zip(paths, stems)]
    if len(set(names)) != len(names):
        raise ValueError(f"the same results file is given twice: {', '.join(map(str, paths))}")
    return names


def _tokenized(refs: ReferenceSet, systems: list[ResultsFile], images: list, tokenizer: str, every_image: bool,
               notes: list):
    """(gts, [res per system: image -> its caption or samples], every image's gts or None), tokenized in
    one run of the tokenizer; its warnings added to ``notes``; ``every_image``: REFS's other images too
    (CIDEr-D's ``--idf-from all``, Self-CIDEr's document frequencies)."""
    ref_images = list(refs.captions) if every_image else images
    strings = [c for i in ref_images for c in refs.captions[i]] + [c for s in systems for i in images
                                                                   for c in s.all_captions(i)]
    with warnings.catch_warnings(record=True) as caught:  # PTB: line breaks inside a caption, said once each
        warnings.simplefilter("always")
        tokens = iter(tokenize_all(strings, tokenizer))
    notes.extend(" ".join(str(w.message).split()) for w in caught)
    all_gts = {i: [next(tokens) for _ in refs.captions[i]] for i in ref_images}
    system_res = [{i: [next(tokens) for _ in s.all_captions(i)] for i in images} for s in systems]
    gts = {i: all_gts[i] for i in images}
    return gts, system_res, (all_gts if every_image else None)


def _with_idf(metric, all_gts: dict | None):
    """CIDEr-D with document frequencies of every image of REFS when asked (``--idf-from all``)."""
    if all_gts is not None and metric.name == "CIDEr":
        return postgen.CIDEr(metric.backend, idf_from=all_gts)
    return metric


def _score_all(requested: list[str], options, started, all_gts, gts: dict, system_res: list[dict], names: list[str],
               meanwhile=lambda ran, stats: None, diverse: dict | None = None):
    """(name -> the metric that ran, name -> why not, then ``_score``'s three mappings, then what
    ``meanwhile(ran, stats)`` gave), in ``requested``'s order; ``meanwhile`` runs after this
    process's metrics (``ran`` so far, their statistics), while METEOR's process may still align.

    ``started``: the metrics that release the GIL (``PostgenMetric.releases_gil``: METEOR), made
    by the caller apart (METEOR's native backend in a process of its own, ``PostgenMetric.apart``;
    its jar in a JVM). Their statistics of the first system are begun first (``stats_started``:
    sent to that process), so that they are computed beside the rest; the other systems' after.
    (In this process, METEOR's Python part and numba's start held the GIL that the array metrics'
    many short numpy calls wait for.) Of the rest, the array metrics first: they share each
    system's encoded corpus (kept in postgen's cache), released before the others are started (at
    40,504 images it held 1.2 GB through the others' run). ``diverse``: the diversity metrics (name ->
    metric, ``samples.diversity_metrics``), scored after them in this process."""
    diverse = diverse or {}
    beside = started.names + list(started.unavailable)
    shared = [name for name in requested if name in postgen.ARRAY_METRICS and name not in beside]
    shared.sort(key=lambda name: name != "ROUGE_L")  # it reads the strings alone: its 250 MB of pairs before the n-grams
    parts = [shared, [name for name in requested if name not in shared and name not in beside and name not in diverse]]
    ran, unavailable = {}, {}
    into = tuple({s: {} for s in names} for _ in range(3))  # stats, per_image, corpus

    def run(part: list[str]) -> None:
        with postgen.make_metrics(part, options) as started:
            unavailable.update(started.unavailable)
            scorers = {metric.name: _with_idf(metric, all_gts) for metric in started.metrics}
            _score(scorers, gts, system_res, names, into)
            ran.update(scorers)

    unavailable.update(started.unavailable)
    begun = [(metric, metric.stats_started(gts, system_res[0]) if metric.has_stats else None)
             for metric in started.metrics]
    for part in parts:
        if part:
            run(part)
            release_kept()
    if diverse:
        _score(diverse, gts, system_res, names, into)
        ran.update(diverse)
    ahead = meanwhile(dict(ran), into[0])
    for metric, finish in begun:
        if finish is None:  # no per-image statistics: its own compute_score, every system
            _score({metric.name: metric}, gts, system_res, names, into)
        else:
            rows = finish()
            into[0][names[0]][metric.name], into[1][names[0]][metric.name] = rows, metric.per_image(rows)
            _score({metric.name: metric}, gts, system_res[1:], names[1:], into)
        ran[metric.name] = metric
    return ({name: ran[name] for name in requested if name in ran},
            {name: unavailable[name] for name in requested if name in unavailable}, *into, ahead)


def _score(scorers: dict, gts: dict, system_res: list[dict], names: list[str], into: tuple[dict, dict, dict]) -> None:
    """Fill ``into``: (system -> metric -> f64[images, k] or None, system -> metric -> f64[images] per-image
    scores, system -> metric -> corpus score of the metrics without statistics)."""
    stats, per_image, corpus = into
    for name, metric in scorers.items():
        for system, res in zip(names, system_res):
            if metric.has_stats:  # inputs checked as read; a reference PTB leaves empty is scored as COCOEvalCap does
                rows = metric.stats_of_tokenized(gts, res)
                per_image[system][name] = metric.per_image(rows)
            else:  # declared without per-image statistics (PostgenMetric.has_stats): its own compute_score
                rows = None
                corpus[system][name], scores = metric.compute_score(gts, res)
                per_image[system][name] = np.asarray(scores, np.float64)
            stats[system][name] = rows


def _settings(refs: ReferenceSet, paths, names, tokenizer, idf_from, plan, scorers, unavailable, images,
              jvms: int) -> dict:
    """settings.json; ``scorers``: name -> the metric that ran; ``jvms``: JVMs this run started."""
    from ..postgen import ptb
    from ..postgen.jvm import java_description
    return {
        "tokenizer": tokenizer_label(tokenizer),
        "references": {"path": refs.path, "format": refs.format, "images": len(refs.captions)},
        "captions": dict(zip(names, map(str, paths))),
        "images_scored": images,
        "image_order": "the results' images in the order REFS lists them (COCOEvalCap with "
                       "params['image_id'] = cocoRes.getImgIds())",
        "document_frequencies": ("CIDEr-D: from the references of the images scored (COCOEvalCap)" if idf_from == "scored"
                                 else "CIDEr-D: from the references of every image of REFS (--idf-from all)"),
        "metrics": list(scorers),
        # each metric's backend as it ran (null: the metric has one implementation), the tokenizer's
        "backends": {**{name: getattr(metric, "backend", None) for name, metric in scorers.items()},
                     "tokenizer": ptb.DEFAULT_BACKEND if tokenizer == "ptb" else None},
        "unavailable": unavailable,
        "significance": {"bootstrap_resamples": plan.resamples, "randomization_trials": plan.trials,
                         "seed": plan.seed, "interval": "95% BCa bootstrap (bias-corrected and accelerated)",
                         "tests": "paired bootstrap and approximate randomization against the first system",
                         "difference_interval": "95% simultaneous over the family (single-step max-T on the "
                                                "bootstrap draws): excludes 0 exactly when p_adjusted < 0.05",
                         "multiple_comparisons": "p_adjusted: single-step max-T over the family; p_stepdown: "
                                                 "step-down max-T (Romano-Wolf), no matching interval; p_bootstrap "
                                                 "and p_randomization unadjusted"},
        "versions": {"pregen-jax": _installed("pregen-jax"), "pycocoevalcap": _installed("pycocoevalcap"),
                     "numpy": np.__version__},
        "jvms_started": jvms,  # by the tokenizer and the metrics of this run (postgen/jvm.py counts them)
        "java": java_description() if jvms else "not used",
    }
