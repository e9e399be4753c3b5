# SPDX-FileCopyrightText: 2019 Ruotian Luo
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: MIT
"""The SCST reward as self-critical.pytorch computes it, on its own cached document frequencies
and label rows: ``DocumentFrequency.from_pickle`` reads a ``*-idxs.p`` written here as
``scripts/prepro_ngrams.py`` writes it (on Flickr8k training captions), and ``SelfCritical``'s
two advantages equal a plain-Python transcription of ``get_self_critical_reward`` (greedy
baseline, CIDEr-D and BLEU-4 weights) and of the ``new_self_critical`` loss (mean of the other
samples), within 1e-5 max(1, |r|) in float32, from numpy (through DLPack) and from JAX alike.

How it was written: the oracle follows self-critical.pytorch (Ruotian Luo, MIT):
``scripts/prepro_ngrams.py``, ``captioning/utils/rewards.py`` and ``captioning/modules/losses.py``,
transcribed as plain Python."""
import pickle
from collections import OrderedDict

import jax.numpy as jnp
import numpy as np
import pytest
from pycocoevalcap.bleu.bleu import Bleu as PyBleu
from pycocoevalcap.cider.cider_scorer import CiderScorer

from pregen_jax.datasets import tokenize
from pregen_jax.rewards import Bleu, CiderD, DocumentFrequency, SelfCritical
from tests import ciderd_reference as ref
from tests.conftest import shared

IMAGES, SEQ_LENGTH, K, BATCH = 200, 16, 5, 10


def prepro_ngrams(captions: list[list[list[str]]], wtoi: dict, path) -> None:
    """``prepro_ngrams.py``'s ``-idxs.p``: every reference's tokens + '<eos>' (id 0), words outside
    the vocabulary as 'UNK', as id strings; pyciderevalcap's ``compute_doc_freq`` over one entry
    per image (a defaultdict(float)); ``ref_len`` the number of images; pickled with protocol 2."""
    wtoi = {**wtoi, "<eos>": 0}
    refs_idxs = [[" ".join(str(wtoi[t if t in wtoi else "UNK"]) for t in [*tokens, "<eos>"]) for tokens in refs]
                 for refs in captions]
    scorer = CiderScorer()
    for refs in refs_idxs:
        scorer.cook_append(None, refs)
    scorer.compute_doc_freq()
    with open(path, "wb") as f:
        pickle.dump({"document_frequency": scorer.document_frequency, "ref_len": len(scorer.crefs)}, f, protocol=2)


def get_self_critical_reward(greedy_res, data_gts, gen_result, cider_weight, bleu_weight, cached):
    """f64[B * K]: ``captioning/utils/rewards.py``'s function, its per-sample value (not repeated over T)."""
    batch_size, size = len(data_gts), gen_result.shape[0]
    seq_per_img = size // batch_size
    res = [ref.array_to_str(r) for r in gen_result] + [ref.array_to_str(r) for r in greedy_res]
    gts = [[ref.array_to_str(g) for g in data_gts[i]] for i in range(batch_size)]
    gts_ = [gts[i // seq_per_img] for i in range(size)] + gts
    scores = cider_weight * _cider(res, gts_, cached) + bleu_weight * _bleu(res, gts_)
    return (scores[:size].reshape(batch_size, seq_per_img) - scores[-batch_size:][:, None]).reshape(size)


def new_self_critical(data_gts, gen_result, cider_weight, bleu_weight, cached):
    """f64[B, K]: ``get_scores`` then the ``new_self_critical`` baseline (mean of the other samples)."""
    seq_per_img = gen_result.shape[0] // len(data_gts)
    res = [ref.array_to_str(r) for r in gen_result]
    gts = [[ref.array_to_str(g) for g in data_gts[i // seq_per_img]] for i in range(len(res))]
    scores = (cider_weight * _cider(res, gts, cached) + bleu_weight * _bleu(res, gts)).reshape(-1, seq_per_img)
    return scores - (scores.sum(1, keepdims=True) - scores) / (scores.shape[1] - 1)


def _cider(res, gts, cached):
    with open(cached, "rb") as f:  # the test's own file: ciderD loads it with pickle as well
        data = pickle.load(f)
    scorer = ref.CachedCiderD(data["document_frequency"], data["ref_len"])
    for hypo, refs in zip(res, gts):
        scorer += (hypo, refs)
    return scorer.compute_score()[1]


def _bleu(res, gts):
    keyed = OrderedDict((i, [h]) for i, h in enumerate(res))
    return np.array(PyBleu(4).compute_score({i: gts[i] for i in keyed}, keyed, verbose=0)[1][3])


@pytest.fixture(scope="module")
def scst(tmp_path_factory):
    return scst_data(shared("flickr8k"), IMAGES, BATCH, tmp_path_factory.mktemp("cached"))


def scst_data(folder, images: int, batch_size: int, out):
    """(pickle path, vocabulary size, label rows of every image, every image's full id captions,
    the batch's images, samples i64[B * K, T], greedy i64[B, T]) from Flickr8k's first ``images``
    training images, the ``-idxs.p`` written into the folder ``out``."""
    names = folder.joinpath("Flickr_8k.trainImages.txt").read_text().split()[:images]
    by_image: dict = {n: [] for n in names}
    for line in folder.joinpath("Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        if key.split("#")[0] in by_image:
            by_image[key.split("#")[0]].append(tokenize(caption))
    captions = [by_image[n] for n in names]
    counts: dict = {}
    for w in (w for refs in captions for c in refs for w in c):
        counts[w] = counts.get(w, 0) + 1
    words = sorted(w for w, c in counts.items() if c >= 2)
    wtoi = {w: i + 1 for i, w in enumerate(words)} | {"UNK": len(words) + 1}
    path = out / "flickr-train-idxs.p"
    prepro_ngrams(captions, wtoi, path)
    ids = [[[wtoi.get(w, wtoi["UNK"]) for w in c] for c in refs] for refs in captions]
    labels = [np.array([(c + [0] * SEQ_LENGTH)[:SEQ_LENGTH] for c in refs]) for refs in ids]  # cut: no end token
    rng = np.random.default_rng(60)
    batch = rng.choice(images, batch_size, replace=False)
    samples = np.zeros((batch_size * K, SEQ_LENGTH), np.int64)
    for b, image in enumerate(batch):
        for k in range(K):  # its own captions, words dropped or swapped for another image's, cut at T
            words = list(ids[image][k % len(ids[image])]) + list(ids[(image + k) % images][0])[:k]
            keep = [w if rng.random() > 0.2 else int(rng.integers(1, len(wtoi) + 1)) for w in words]
            row = keep[:SEQ_LENGTH] + [0] * max(0, SEQ_LENGTH - len(keep))
            samples[b * K + k] = row
    greedy = np.array([(ids[i][-1] + [0] * SEQ_LENGTH)[:SEQ_LENGTH] for i in batch])
    greedy[0] = np.r_[np.array(ids[batch[0]][0] * 4)[:SEQ_LENGTH - 1], 0]  # the end token in the last position
    return path, len(wtoi) + 1, labels, ids, batch, samples, greedy


def test_from_pickle_reads_prepro_ngrams_file(scst):
    path, vocab_size, _, ids, *_ = scst
    got = DocumentFrequency.from_pickle(path)
    want = DocumentFrequency.from_references(ids, end="always")  # prepro_ngrams: tokens + ['<eos>']
    assert got.images == IMAGES and len(got.keys) > 5_000
    np.testing.assert_array_equal(got.keys, want.keys)
    np.testing.assert_array_equal(got.df, want.df)


@pytest.mark.parametrize(("cider_weight", "bleu_weight"), [pytest.param(1.0, 0.0, marks=pytest.mark.slow), (1.0, 0.5)])
def test_both_baselines_equal_self_critical_pytorch(scst, cider_weight, bleu_weight):
    path, vocab_size, labels, _, batch, samples, greedy = scst
    data_gts = [labels[i] for i in batch]
    assert (~(np.concatenate(data_gts) == 0).any(1)).sum() >= 3 and (~(samples == 0).any(1)).sum() >= 3  # no end token
    critic = SelfCritical(CiderD(labels, document_frequency=DocumentFrequency.from_pickle(path), vocab_size=vocab_size),
                          Bleu(labels, vocab_size=vocab_size), cider_weight=cider_weight, bleu_weight=bleu_weight)
    want = get_self_critical_reward(greedy, data_gts, samples, cider_weight, bleu_weight, path)
    want_mean = new_self_critical(data_gts, samples, cider_weight, bleu_weight, path)
    assert np.abs(want).max() > 0.5 and np.abs(want_mean).max() > 0.5
    limit = 1e-5 * np.maximum(1.0, np.abs(want))
    for kind in (np.asarray, jnp.asarray):  # numpy through DLPack; JAX arrays as they are
        got = critic.advantage_over_greedy(kind(samples), kind(greedy), kind(batch))
        assert isinstance(got, np.ndarray if kind is np.asarray else type(jnp.zeros(1)))
        assert got.shape == (BATCH * K,) and (np.abs(np.asarray(got) - want) <= limit).all()
        got = critic.advantage_over_mean(kind(samples.reshape(BATCH, K, -1)), kind(batch))
        assert got.shape == (BATCH, K)
        assert (np.abs(np.asarray(got) - want_mean) <= 1e-5 * np.maximum(1.0, np.abs(want_mean))).all()


def test_a_pickle_that_names_anything_else_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return open, (str(marker), "w")

    evil = tmp_path / "evil-idxs.p"
    evil.write_bytes(pickle.dumps({"document_frequency": {("1",): 1.0}, "ref_len": Payload()}, protocol=2))
    with pytest.raises(ValueError, match=r"evil-idxs\.p: not a cached document frequency pickle .*io\.open"):
        DocumentFrequency.from_pickle(evil)
    assert not marker.exists()
    words = tmp_path / "coco-train-words.p"
    words.write_bytes(pickle.dumps({"document_frequency": {("a", "dog"): 2.0}, "ref_len": 3}, protocol=2))
    with pytest.raises(ValueError, match=r"n-gram \('a', 'dog'\) is not 1\.\.4 id strings"):
        DocumentFrequency.from_pickle(words)
    wide = tmp_path / "wide-idxs.p"  # an id no exact key holds: refused, not wrapped
    wide.write_bytes(pickle.dumps({"document_frequency": {("3", "65535"): 1.0}, "ref_len": 3}, protocol=2))
    with pytest.raises(ValueError, match=r"wide-idxs\.p: token ids must lie in 0\.\.65534"):
        DocumentFrequency.from_pickle(wide)
    bad = tmp_path / "bad-idxs.p"
    bad.write_bytes(pickle.dumps({"document_frequency": {}, "ref_len": 0}))
    with pytest.raises(ValueError, match="ref_len 0 is not a number of images"):
        DocumentFrequency.from_pickle(bad)
