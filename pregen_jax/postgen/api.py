"""The functional API, as aac-metrics offers it: ``score(name, gts, res, **options) -> (corpus, per_image)``.

``gts``: image id -> reference strings; ``res``: image id -> [one candidate string]. Strings are
tokenized by ``tokenizer`` (``postgen.tokenizers``): ``"ptb"`` by default, COCO's PTBTokenizer as
``pregen-search evaluate`` and COCOEvalCap apply it, so the scores are theirs; ``"alnum-lower"``
(the package tokenizer: lower-case alphanumeric runs, the default before 0.2.0) or ``"none"``
(the strings as given; ``tokenize=False`` says the same).

CIDEr-D, BLEU-1..4 and ROUGE-L run on their native, array backends (``backend="coco"`` runs
pycocoevalcap instead); ``score_systems`` scores many candidate sets against one set of
references, encoding the references once. Other metrics (METEOR, WMD, SPICE, REO) run through
the registry with their toolkits.

Document frequencies of CIDEr-D: by default from the references of the images scored (as
pycocoevalcap, and as the 2018 strata); with ``idf_from=all_gts`` from those of ``all_gts``, so
that each image of a subset gets its whole-set score (use this to estimate the whole-set CIDEr-D
from a random subset).
"""
from __future__ import annotations

import numpy as np

from .base import PostgenOptions, backend_name, check_inputs
from .bleu import bleu_counts, bleu_scores
from .cider import CIDEr, cider_d
from .corpus import Corpus
from .recent import CACHE
from .registry import check_metric_names, make_metrics
from .rouge import rouge_l
from .text import is_tokenized
from .tokenizers import DEFAULT_TOKENIZER, check_tokenizer_name, tokenize_all

ARRAY_METRICS = ("CIDEr", "Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L")


def tokenized(strings: list[str]) -> list[str]:
    """``strings`` as the package tokenizer writes them (unchanged when they already are)."""
    if not strings or is_tokenized("\n".join(strings), len(strings)):
        return list(strings)
    from ..datasets import tokenize
    return [" ".join(tokenize(s)) for s in strings]


def score(name: str, gts: dict, res: dict, backend: str = "native", idf_from: dict | None = None,
          tokenize: bool = True, tokenizer: str = DEFAULT_TOKENIZER, **options) -> tuple[float, list[float]]:
    """(corpus score, per-image scores in ``gts`` order) of metric ``name``: its ``compute_score``.

    ``backend``: ``"native"`` (default) or ``"coco"`` (the reference toolkit; every metric); ``idf_from``: CIDEr's
    reference set for document frequencies; ``tokenizer``: ``"ptb"`` (default: ``evaluate``'s and
    COCOEvalCap's), ``"alnum-lower"`` (the default before 0.2.0) or ``"none"`` (``tokenize=False``
    is ``"none"`` too); ``options``: ``PostgenOptions`` fields (``stopwords``, ``corenlp_dir``,
    ``reo_model``) for the toolkit metrics. Inputs are checked and tokenized once (kept in the cache
    by content), so BLEU, ROUGE-L and CIDEr-D scored in turn on the same captions share one
    tokenization and one encoded corpus.
    """
    backend = backend_name(backend, "score")
    tokenizer = check_tokenizer_name(tokenizer) if tokenize else "none"
    if idf_from is not None and name != "CIDEr":
        raise ValueError(f"idf_from applies to CIDEr only, not {name}")
    check_metric_names([name])
    gts, res, idf_from = _checked(gts, res, idf_from, tokenizer)
    with make_metrics([name], PostgenOptions(**options, backend=backend)) as metrics:
        if not metrics.metrics:
            raise RuntimeError(f"{name} unavailable: {metrics.unavailable[name]}")
        metric = CIDEr(backend, idf_from) if idf_from is not None else metrics.metrics[0]
        if name not in ARRAY_METRICS:
            return metric.compute_score(gts, res)
        # checked before tokenizing: a reference that tokenizes to nothing is scored, as the toolkit scores it
        stats = metric.stats_of_tokenized(gts, res)
        return float(metric.aggregate(stats)), metric.per_image(stats).tolist()


def _checked(gts: dict, res: dict, idf_from: dict | None, tokenizer: str) -> tuple[dict, dict, dict | None]:
    """(gts, res, idf_from) checked and tokenized by ``tokenizer``: kept by content in the cache,
    as a copy (the caller's dictionaries may change after the call)."""
    if tokenizer == "none":
        check_inputs(gts, res)
        return gts, res, idf_from

    def build():
        check_inputs(gts, res)
        out = _tokenized(gts, res, idf_from, tokenizer)
        return tuple(None if d is None else {i: list(v) for i, v in d.items()} for d in out)
    from .cider import inputs_key
    return CACHE.get(("tokenized", tokenizer, inputs_key(gts, res, idf_from)), build)


def score_systems(names, gts: dict, systems: dict, idf_from: dict | None = None,
                  tokenize: bool = True, tokenizer: str = DEFAULT_TOKENIZER) -> dict:
    """{system: {metric: (corpus score, f64[I] per-image scores in ``gts`` order)}} for array metrics.

    ``systems``: system name -> ``res`` (image id -> [candidate]) over the images of ``gts``;
    ``tokenizer`` as ``score``'s. The references are split, numbered and counted once for all systems.
    """
    tokenizer = check_tokenizer_name(tokenizer) if tokenize else "none"
    unknown = [n for n in names if n not in ARRAY_METRICS]
    if unknown:
        raise ValueError(f"score_systems: {unknown[0]!r} has no array form; choose from {', '.join(ARRAY_METRICS)}")
    for system, res in systems.items():
        check_inputs(gts, res, f"system {system}" if system is not None else "captions")
    if tokenizer != "none":
        gts, _, idf_from = _tokenized(gts, {}, idf_from, tokenizer)
        systems = {s: _tokenized({}, res, None, tokenizer)[1] for s, res in systems.items()}
    from .cider import _corpus_of
    ids = list(gts)
    images = len(ids)
    base = _corpus_of(gts, {i: [""] for i in ids}, idf_from)
    cands = [res[i][0] for res in systems.values() for i in ids]
    corpus = Corpus.build([base.refs[s:s + c] for s, c in zip(base.ref_start, base.ref_count)], cands,
                          np.tile(base.cand_image, len(systems)), kept=True)
    results: dict = {system: {} for system in systems}
    if any(n.startswith("Bleu_") for n in names):
        correct, guess, testlen, reflen = bleu_counts(corpus)
        for k, system in enumerate(systems):
            part = slice(k * images, (k + 1) * images)
            whole, per_image = bleu_scores(correct[part], guess[part], testlen[part], reflen[part])
            for n in (1, 2, 3, 4):
                if f"Bleu_{n}" in names:
                    results[system][f"Bleu_{n}"] = (float(whole[n - 1]), per_image[:, n - 1])
    for name, metric in (("ROUGE_L", rouge_l), ("CIDEr", cider_d)):
        if name in names:
            values = metric(corpus)
            for k, system in enumerate(systems):
                per_image = values[k * images:(k + 1) * images]
                results[system][name] = (float(np.mean(per_image)), per_image)
    return results


def _tokenized(gts: dict, res: dict, idf_from: dict | None, tokenizer: str) -> tuple[dict, dict, dict | None]:
    """(gts, res, idf_from) tokenized by ``tokenizer`` (``ptb`` or ``alnum-lower``), the references
    and captions in one run of it."""
    refs = [r for image_refs in gts.values() for r in image_refs]
    cands = [c[0] if c else "" for c in res.values()]
    if tokenizer == "alnum-lower" and all(not strings or is_tokenized("\n".join(strings), len(strings))
                                          for strings in (refs, cands)) and (idf_from is None or idf_from is gts):
        return gts, res, idf_from  # already its tokens: the inputs as they are, not copied
    keys, res_keys = list(gts), list(res)
    strings = [r for i in keys for r in gts[i]] + [res[i][0] if res[i] else "" for i in res_keys]
    if tokenizer == "alnum-lower":
        strings = tokenized(strings)
    else:
        strings = tokenize_all(strings, tokenizer)
    out, at = {}, 0
    for i in keys:
        out[i], at = strings[at:at + len(gts[i])], at + len(gts[i])
    res = {i: [c] if res[i] else [] for i, c in zip(res_keys, strings[at:])}
    if idf_from is not None:
        idf_from = _tokenized(idf_from, {}, None, tokenizer)[0]
    return out, res, idf_from
