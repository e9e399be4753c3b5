"""What MUTT and the human-judgment correlations share: starting the post-gen metrics, scoring
candidates one corpus call per metric, and markdown tables."""
from __future__ import annotations

import numpy as np

from ..metric_names import POSTGEN_NAMES
from ..pipeline.unit_test_results import markdown_table  # noqa: F401  (one table writer; meta modules import it from here)

METRIC_ORDER = POSTGEN_NAMES  # display order of the registered post-gen metrics (any other registered name follows)


def requested_metrics(spec: str | None) -> list[str]:
    """The metric names of a ``--metrics A,B`` value; every registered metric when ``spec`` is None."""
    from .. import postgen
    text_only = [n for n in postgen.metric_names() if not postgen.REGISTRY[n].needs_images]  # no images here
    registered = [n for n in METRIC_ORDER if n in text_only] + [n for n in text_only if n not in METRIC_ORDER]
    if spec is None:
        return registered
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise ValueError("--metrics: no metric named")
    unknown = [n for n in names if n not in registered]
    if unknown:
        raise ValueError(f"--metrics: unknown metric(s) {unknown}; choose from {registered}")
    return list(dict.fromkeys(names))


def open_metrics(names: list[str], options=None):
    """Start the named metrics (a ``postgen.MetricSet``); WMD drops the 2018 stop words where the file exists."""
    from .. import postgen
    return postgen.make_metrics(names, options or postgen.PostgenOptions())


def score_candidates(metric_set, references: list[list[str]], candidates: list[str],
                     memo: dict | None = None) -> dict[str, np.ndarray]:
    """Per-candidate scores, ``f[candidates]`` per metric, from one corpus call per metric.

    Candidates are keyed by their position, so repeated candidates stay separate entries.
    ``references[i]`` and ``candidates[i]`` are tokenised strings (tokens joined by spaces).
    ``memo`` ((metric, candidate, references) -> score) lets a second scoring of mostly the same
    pairs skip the pairs already scored, for every metric whose per-candidate score does not
    depend on the other candidates (``corpus_dependent``: CIDEr's document frequencies do).
    """
    gts = dict(enumerate(references))
    res = {i: [c] for i, c in enumerate(candidates)}
    scores = {}
    for metric in metric_set.metrics:
        if memo is None or metric.corpus_dependent:
            scores[metric.name] = np.asarray(metric.compute_score(gts, res)[1], float)
            continue
        keys = [(metric.name, c, tuple(r)) for c, r in zip(candidates, references)]
        todo = list({k: i for i, k in enumerate(keys) if k not in memo}.values())
        if todo:
            _, per = metric.compute_score({j: references[i] for j, i in enumerate(todo)},
                                          {j: [candidates[i]] for j, i in enumerate(todo)})
            memo.update({keys[i]: float(s) for i, s in zip(todo, per)})
        scores[metric.name] = np.array([memo[k] for k in keys], float)
    return scores
