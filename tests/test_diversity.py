# SPDX-FileCopyrightText: 2019 Ruotian Luo
# SPDX-FileCopyrightText: 2015 Xinlei Chen, Hao Fang, Tsung-Yi Lin, and Ramakrishna Vedantam
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT AND BSD-2-Clause-Views
"""The diversity metrics (postgen/diversity.py, selfcider.py) against their references' algorithms.

The oracles follow their sources step by step, written out plainly: Div-n, gDiv-1 and get_div
from Ruotian Luo's self-critical.pytorch (captioning/utils/div_utils.py, eval_multi.py: MIT), the
Self-CIDEr kernel from ruotianluo/cider's CiderScorer (counts2vec, sim, my_get_self_cider:
Ramakrishna Vedantam, Tsung-Yi Lin; coco-caption's BSD-2-Clause-Views).

What is checked:
Div-n and gDiv-1 as div_utils.py computes them, mBLEU with pycocoevalcap's own ``Bleu`` run as
eval_div_stats runs it, Self-CIDEr with the dictionaries of ruotianluo/cider's scorer and
eval_multi's ``get_div``; on real captions (where-image2's 12 models as 12 samples per image and
as 3 runs per architecture, Flickr8k's human captions as 5 samples) and edge cases. Within 1e-12
(Self-CIDEr 1e-7 where samples repeat: eigenvalues near zero move by about 1e-8).

The fast tests take a subsample of images; ``-m slow`` runs the 1,000 test images."""
import functools
import math
import re
from collections import defaultdict

import numpy as np
import pytest

from pregen_jax import postgen
from tests.conftest import shared

ARCHITECTURES = ("init", "pre", "par", "merge")


# ---- the references' algorithms, written out plainly ------------------------------------------------
def oracle_div_n(caps: dict, n: int) -> tuple[float, np.ndarray]:
    """div_utils.compute_div_n."""
    aggr_div = []
    for k in caps:
        all_ngrams, len_t = set(), 0.0
        for c in caps[k]:
            tkns = c.split()
            len_t += len(tkns)
            all_ngrams.update(zip(*[tkns[i:] for i in range(n)]))
        aggr_div.append(float(len(all_ngrams)) / (1e-6 + float(len_t)))
    return np.array(aggr_div).mean(), np.array(aggr_div)


def oracle_global_div_1(caps: dict) -> float:
    """div_utils.compute_global_div_n with n = 1."""
    return float(len({(t,) for k in caps for c in caps[k] for t in c.split()}))


def oracle_mbleu(caps: dict) -> tuple[np.ndarray, np.ndarray]:
    """eval_div_stats' mBLEU: pycocoevalcap's Bleu(4) of slot i against the others; (f[4] mean over
    slots, f[4, images] each image's sentence BLEU averaged over slots)."""
    from pycocoevalcap.bleu.bleu import Bleu
    m = len(next(iter(caps.values())))
    all_scrs, per_image = [], np.zeros((m, 4, len(caps)))
    for i in range(m):
        refs = {k: caps[k][:i] + caps[k][i + 1:] for k in caps}
        cands = {k: [caps[k][i]] for k in caps}
        score, scores = Bleu(4).compute_score(refs, cands, verbose=0)
        all_scrs.append(score)
        per_image[i] = np.array(scores)
    return np.array(all_scrs).mean(axis=0), per_image.mean(axis=0)


def _precook(s: str, n: int = 4) -> dict:
    words, counts = s.split(), defaultdict(int)
    for k in range(1, n + 1):
        for i in range(len(words) - k + 1):
            counts[tuple(words[i:i + k])] += 1
    return counts


def oracle_document_frequency(refs: list[list[str]]) -> dict:
    """CiderScorer.compute_doc_freq: the number of images whose references hold each n-gram."""
    document_frequency = defaultdict(float)
    for group in refs:
        for ngram in {g for r in group for g in _precook(r)}:
            document_frequency[ngram] += 1
    return document_frequency


def oracle_self_cider(refs: list[list[str]], caps: dict, document_frequency: dict | None = None) -> np.ndarray:
    """eval_self_cider: document frequencies over every image of ``refs``, each image's kernel by
    my_get_self_cider (counts2vec, sim), then get_div of eigvalsh(kernel / 10)."""
    document_frequency = oracle_document_frequency(refs) if document_frequency is None else document_frequency
    ref_len = np.log(float(len(refs)))

    def counts2vec(cnts):
        vec, norm = [defaultdict(float) for _ in range(4)], [0.0] * 4
        for ngram, term_freq in cnts.items():
            df = np.log(max(1.0, document_frequency[ngram]))
            n = len(ngram) - 1
            vec[n][ngram] = float(term_freq) * (ref_len - df)
            norm[n] += pow(vec[n][ngram], 2)
        return vec, [np.sqrt(x) for x in norm]

    def sim(vec_hyp, vec_ref, norm_hyp, norm_ref):
        val = np.zeros(4)
        for n in range(4):
            for ngram in vec_hyp[n]:
                val[n] += vec_hyp[n][ngram] * vec_ref[n][ngram]
            if norm_hyp[n] != 0 and norm_ref[n] != 0:
                val[n] /= norm_hyp[n] * norm_ref[n]
        return val

    out = []
    for k in caps:
        vecs = [counts2vec(_precook(c)) for c in caps[k]]
        scores = np.zeros((len(vecs), len(vecs), 4))
        for t, (vec, norm) in enumerate(vecs):
            for r, (vec_ref, norm_ref) in enumerate(vecs):
                scores[t, r] += sim(vec, vec_ref, norm, norm_ref)
        kernel = np.mean(scores, -1) * 10.0
        eigvals = np.clip(np.linalg.eigvalsh(kernel / 10), 0, None)
        out.append(-np.log(np.sqrt(eigvals[-1]) / (np.sqrt(eigvals).sum())) / np.log(len(eigvals)))
    return np.array(out)


# ---- real captions ------------------------------------------------------------------------------------
def _alnum(text: str) -> str:
    return " ".join(re.findall("[a-z0-9]+", text.lower()))


@functools.cache
def flickr8k_test_references() -> dict:
    """Flickr8k's test images (where-image2's order) -> their five captions, alnum-lower."""
    folder = shared("flickr8k")
    images = shared("where-image2-captions", "imgs_flickr8k.txt").read_text().split()
    refs = defaultdict(list)
    for line in (folder / "Flickr8k.token.txt").read_text().splitlines():
        name, caption = line.split("\t")
        refs[name.split("#")[0]].append(_alnum(caption))
    return {image: refs[image] for image in images}


def where_image2_samples(runs: tuple[str, ...]) -> dict:
    """image -> the captions of the models ``runs`` (e.g. ``init_1``), in that order."""
    folder = shared("where-image2-captions")
    images = (folder / "imgs_flickr8k.txt").read_text().split()
    columns = [(folder / f"flickr8k_{run}.txt").read_text().splitlines() for run in runs]
    return {image: [column[k] for column in columns] for k, image in enumerate(images)}


ALL_RUNS = tuple(f"{a}_{r}" for a in ARCHITECTURES for r in (1, 2, 3))


@functools.cache
def _flickr8k_document_frequency() -> dict:
    return oracle_document_frequency(list(flickr8k_test_references().values()))


def _sets(every: int, architectures=ARCHITECTURES):
    """(name, references of all 1,000 images, samples of every ``every``-th image)."""
    refs = flickr8k_test_references()
    pick = lambda caps: {i: caps[i] for i in list(caps)[::every]}
    yield "where-image2: 12 models", refs, pick(where_image2_samples(ALL_RUNS))
    for arch in architectures:
        yield f"where-image2: 3 runs of {arch}", refs, pick(where_image2_samples(tuple(f"{arch}_{r}" for r in (1, 2, 3))))
    yield "flickr8k: 5 human captions", refs, pick(refs)


def _check_all(refs: dict, caps: dict, self_cider_tol: float = 1e-12) -> None:
    gts = {i: refs[i] for i in caps}
    for n in (1, 2):
        metric = postgen.diversity_metric(f"Div_{n}")
        stats = metric.stats(gts, caps)
        want, want_per_image = oracle_div_n(caps, n)
        assert abs(metric.aggregate(stats) - want) <= 1e-12
        np.testing.assert_allclose(metric.per_image(stats), want_per_image, rtol=0, atol=1e-12)
    gdiv = postgen.diversity_metric("gDiv_1")
    assert gdiv.aggregate(gdiv.stats(gts, caps)) == oracle_global_div_1(caps)
    if len(next(iter(caps.values()))) > 1:
        want, want_per_image = oracle_mbleu(caps)
        for n in (1, 2, 3, 4):
            metric = postgen.diversity_metric(f"mBLEU_{n}")
            stats = metric.stats(gts, caps)
            assert abs(metric.aggregate(stats) - want[n - 1]) <= 1e-12, n
            np.testing.assert_allclose(metric.per_image(stats), want_per_image[n - 1], rtol=0, atol=1e-12)
        metric = postgen.diversity_metric("Self_CIDEr")
        metric.idf_from = refs
        stats = metric.stats(gts, caps)
        df = _flickr8k_document_frequency() if refs is flickr8k_test_references() else None
        want = oracle_self_cider(list(refs.values()), caps, df)
        np.testing.assert_allclose(stats[:, 0], want, rtol=0, atol=self_cider_tol)
        assert abs(metric.aggregate(stats) - want.mean()) <= self_cider_tol


def test_each_metric_equals_its_oracle_on_real_captions():
    """20 of the 1,000 Flickr8k test images (document frequencies over all 1,000): the 12 models, the
    3 runs of one architecture, the human captions (every architecture: the slow test)."""
    for name, refs, caps in _sets(50, ("merge",)):
        _check_all(refs, caps, 1e-7 if "where-image2" in name else 1e-12)


@pytest.mark.slow
def test_each_metric_equals_its_oracle_on_all_1000_images():
    for name, refs, caps in _sets(1):
        _check_all(refs, caps, 1e-7 if "where-image2" in name else 1e-12)


def test_edge_cases_duplicates_one_sample_and_empty_captions():
    refs = {"a": ["a dog runs on the grass", "a brown dog"], "b": ["two men talk", "men in a street"],
            "c": ["a cat", "a cat sits on a mat"]}
    duplicates = {"a": ["a dog runs", "a dog runs", "a dog runs"], "b": ["two men", "two men", "a man talks"],
                  "c": ["a cat sits", "a cat", "a cat sits"]}
    _check_all(refs, duplicates, 1e-7)
    empty = {"a": ["", "a dog runs", ""], "b": ["two men", "", "men"], "c": ["a cat", "a cat sits", "cat"]}
    _check_all(refs, empty, 1e-7)
    one = {i: [caps[0]] for i, caps in duplicates.items()}
    _check_all(refs, one)  # Div-n and gDiv-1 only; mBLEU and Self-CIDEr need two samples:
    for name in ("mBLEU_4", "Self_CIDEr"):
        with pytest.raises(ValueError, match="at least 2 needed"):
            postgen.diversity_metric(name).stats(refs, one)
    with pytest.raises(ValueError, match="every image needs the same number"):
        postgen.diversity_metric("Div_1").stats(refs, {**duplicates, "c": ["a cat"]})
    with pytest.raises(ValueError, match="0/0"):
        postgen.diversity_metric("Self_CIDEr").stats(refs, {**empty, "a": ["", ""], "b": ["x", "y"], "c": ["a", "b"]})


def test_div_counts_tokens_not_ngrams_and_mbleu_depends_on_order():
    """The quirks that a mutation breaks: Div-2's denominator is tokens (+1e-6), not bigrams; mBLEU is
    the mean over slots of corpus BLEU (not the mean of sentence BLEU)."""
    caps = {"a": ["a b c", "a b d"]}
    assert postgen.diversity_metric("Div_2").aggregate(postgen.diversity_metric("Div_2").stats(caps, caps)) == \
        3 / (6 + 1e-6)
    rng = np.random.default_rng(0)
    words = "a the dog cat runs sits on in grass street red big".split()
    caps = {k: [" ".join(rng.choice(words, rng.integers(1, 9))) for _ in range(4)] for k in range(30)}
    metric = postgen.diversity_metric("mBLEU_4")
    stats = metric.stats(caps, caps)
    assert abs(metric.aggregate(stats) - oracle_mbleu(caps)[0][3]) <= 1e-12
    assert abs(metric.aggregate(stats) - metric.per_image(stats).mean()) > 1e-6
    assert math.isfinite(metric.aggregate(stats))
