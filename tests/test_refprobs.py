"""RefProbs validates its input and says which image/reference is wrong."""
import numpy as np
import pytest

from pregen_jax import RefProbs


def arrays(images=2, refs=2, positions=4):
    probs = np.full((images, refs, positions), 0.5)
    ranks = np.zeros((images, refs, positions), np.int32)
    mask = np.ones((images, refs, positions), bool)
    return probs, ranks, mask


def test_valid_and_properties():
    rp = RefProbs(*arrays())
    assert rp.num_images == 2 and rp.lengths.tolist() == [[4, 4], [4, 4]]
    assert rp.take([1]).num_images == 1


@pytest.mark.parametrize("edit, message", [
    (lambda p, k, m: p.__setitem__((1, 0, 2), np.nan), "image 1, reference 0, position 2: probability is nan"),
    (lambda p, k, m: p.__setitem__((0, 1, 0), 1.5), "image 0, reference 1, position 0: probability 1.5 is outside"),
    (lambda p, k, m: k.__setitem__((0, 0, 1), -1), "negative rank"),
    (lambda p, k, m: m.__setitem__((1, slice(None), slice(None)), False), "image 1 has no reference"),
    (lambda p, k, m: m.__setitem__((0, 1, 1), False), "image 0, reference 1: mask is not a left-aligned"),
    (lambda p, k, m: m.__setitem__((0, 0, slice(None)), False), "image 0, reference 0 has no positions"),
])
def test_invalid_inputs_name_the_culprit(edit, message):
    probs, ranks, mask = arrays()
    edit(probs, ranks, mask)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        RefProbs(probs, ranks, mask)


def test_shape_and_dtype_errors():
    probs, ranks, mask = arrays()
    with pytest.raises(ValueError, match="3-D"):
        RefProbs(probs[0], ranks[0], mask[0])
    with pytest.raises(ValueError, match="ranks has shape"):
        RefProbs(probs, ranks[:, :1], mask)
    with pytest.raises(ValueError, match="mask must be bool"):
        RefProbs(probs, ranks, mask.astype(int))
    with pytest.raises(ValueError, match="ranks must be integers"):
        RefProbs(probs, ranks.astype(float), mask)


def test_nan_in_padding_is_fine():
    probs, ranks, mask = arrays()
    mask[0, 0, 3] = False
    probs[0, 0, 3] = np.nan
    RefProbs(probs, ranks, mask)


def test_npz_roundtrip_and_errors(tmp_path):
    rp = RefProbs(*arrays(), source="x")
    rp.save(tmp_path / "rp.npz")
    back = RefProbs.load(tmp_path / "rp.npz")
    np.testing.assert_array_equal(back.probs, rp.probs)
    (tmp_path / "bad.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="bad.npz: not a readable .npz"):
        RefProbs.load(tmp_path / "bad.npz")
    np.savez(tmp_path / "part.npz", probs=rp.probs)
    with pytest.raises(ValueError, match=r"part.npz: missing arrays \['mask', 'ranks'\]"):
        RefProbs.load(tmp_path / "part.npz")
    probs, ranks, mask = arrays()
    probs[1, 1, 1] = np.nan
    np.savez(tmp_path / "nan.npz", probs=probs, ranks=ranks, mask=mask)
    with pytest.raises(ValueError, match="nan.npz: image 1, reference 1, position 1"):
        RefProbs.load(tmp_path / "nan.npz")


# ------------------------------------------------------------------ from_log_probs / from_token_scores


def oracle(scores, targets, starts=None, logits=False):
    """Straightforward per-position loops: (probs[i][r], ranks[i][r]) lists, words when ``starts``."""
    probs, ranks = [], []
    for i, refs in enumerate(scores):
        probs.append([]), ranks.append([])
        for r, rows in enumerate(refs):
            p, k = [], []
            for t, row in enumerate(np.asarray(rows, np.float64)):
                target = int(targets[i][r][t])
                log_norm = np.log(sum(np.exp(v) for v in row)) if logits else 0.0
                lp = row[target] - log_norm
                rank = sum(1 for v in row if v > row[target])
                if starts is not None and not starts[i][r][t]:
                    p[-1] += lp  # another piece of the same word
                    k[-1] = max(k[-1], rank)
                else:
                    p.append(lp), k.append(rank)
            probs[-1].append(np.exp(p)), ranks[-1].append(k)
    return probs, ranks


def random_model(seed=0, vocab=7, ties=False):
    """Ragged references (2-3 per image, 1-5 positions) with logits, targets and word starts."""
    rng = np.random.default_rng(seed)
    logits, targets, starts = [], [], []
    for _ in range(3):
        refs = int(rng.integers(2, 4))
        lengths = rng.integers(1, 6, refs)
        logits.append([rng.normal(size=(n, vocab)).astype(np.float32) for n in lengths])
        if ties:
            logits[-1] = [np.round(x) for x in logits[-1]]
        targets.append([rng.integers(0, vocab, n) for n in lengths])
        starts.append([np.r_[True, rng.random(n - 2) < 0.5, True][:n] if n > 1 else np.array([True])
                       for n in lengths])
    return logits, targets, starts


def log_softmax(x):
    x = np.asarray(x, np.float64)
    return x - (x.max(-1, keepdims=True) + np.log(np.exp(x - x.max(-1, keepdims=True)).sum(-1, keepdims=True)))


def assert_matches(rp, probs, ranks):
    got = RefProbs.from_lists(probs, ranks)
    np.testing.assert_array_equal(np.asarray(rp.mask), np.asarray(got.mask))
    np.testing.assert_allclose(np.asarray(rp.probs), np.asarray(got.probs), rtol=1e-6, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(rp.ranks), np.asarray(got.ranks))


@pytest.mark.parametrize("ties", [False, True])
def test_from_log_probs_matches_an_oracle_with_logits_and_log_probs(ties):
    logits, targets, starts = random_model(ties=ties)
    rp = RefProbs.from_log_probs(logits, targets, logits=True)
    assert rp.units == "token"
    assert_matches(rp, *oracle(logits, targets, logits=True))
    log_probs = [[log_softmax(x) for x in refs] for refs in logits]
    assert_matches(RefProbs.from_log_probs(log_probs, targets), *oracle(log_probs, targets))


def test_from_log_probs_at_word_level_matches_the_oracle():
    logits, targets, starts = random_model(seed=1)
    rp = RefProbs.from_log_probs(logits, targets, starts, logits=True)
    assert rp.units == "word"
    assert_matches(rp, *oracle(logits, targets, starts, logits=True))
    assert rp.lengths.tolist()[0][:2] == [int(np.sum(s)) for s in starts[0][:2]]


class Tensor:
    """A framework tensor stand-in: only ``__array__``; counts how many are alive at once."""

    alive = 0
    most = 0

    def __init__(self, array):
        self.array = array
        Tensor.alive += 1
        Tensor.most = max(Tensor.most, Tensor.alive)

    def __del__(self):
        Tensor.alive -= 1

    def __array__(self, dtype=None, copy=None):
        return self.array if dtype is None else self.array.astype(dtype)


def test_from_log_probs_reads_tensors_one_reference_at_a_time_from_generators():
    logits, targets, starts = random_model(seed=2)
    Tensor.alive = Tensor.most = 0
    images = ((Tensor(x) for x in refs) for refs in logits)
    rp = RefProbs.from_log_probs(images, iter(targets), (iter(s) for s in starts), logits=True, source="torch model")
    assert_matches(rp, *oracle(logits, targets, starts, logits=True))
    assert Tensor.most == 1 and rp.source == "torch model"


def test_from_token_scores_equals_from_log_probs():
    logits, targets, starts = random_model(seed=3)
    probs, ranks = oracle(logits, targets, logits=True)
    log_probs = [[np.log(p) for p in refs] for refs in probs]
    for word_starts in (None, starts):
        a = RefProbs.from_token_scores(log_probs, ranks, word_starts)
        b = RefProbs.from_log_probs(logits, targets, word_starts, logits=True)
        np.testing.assert_allclose(np.asarray(a.probs), np.asarray(b.probs), rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(a.ranks), np.asarray(b.ranks))
        assert a.units == b.units


def test_to_words_equals_the_per_reference_rule():
    logits, targets, starts = random_model(seed=4)
    tokens = RefProbs.from_log_probs(logits, targets, logits=True)
    padded = np.zeros(np.shape(tokens.mask), bool)
    for i, refs in enumerate(starts):
        for r, s in enumerate(refs):
            padded[i, r, :len(s)] = s
    words = tokens.to_words(padded)
    direct = RefProbs.from_log_probs(logits, targets, starts, logits=True)
    np.testing.assert_allclose(np.asarray(words.probs), np.asarray(direct.probs), rtol=1e-9)
    np.testing.assert_array_equal(np.asarray(words.ranks), np.asarray(direct.ranks))
    np.testing.assert_array_equal(np.asarray(words.mask), np.asarray(direct.mask))
    assert words.units == "word"


@pytest.mark.parametrize("edit, message", [
    (lambda lg, tg, ws: tg[1].__setitem__(0, tg[1][0][:-1]), "image 1, reference 0: .* tokenization/length problem"),
    (lambda lg, tg, ws: tg[2][1].__setitem__(0, 7), "image 2, reference 1, position 0: token id 7 is outside the "
                                                   "vocabulary of 7 entries: a tokenization problem"),
    (lambda lg, tg, ws: lg[0].__setitem__(1, lg[0][1][0]), "image 0, reference 1: .* must be 2-D"),
    (lambda lg, tg, ws: tg.pop(), "targets ended after 2 entries but log_probs"),
    (lambda lg, tg, ws: tg[1].pop(), "image 1: targets ended after"),
    (lambda lg, tg, ws: ws[0][0].__setitem__(-1, False), "image 0, reference 0: .*end token"),
    (lambda lg, tg, ws: ws[1].__setitem__(0, ws[1][0][:-1]), "image 1, reference 0: word_starts has shape"),
    (lambda lg, tg, ws: lg[2][0].__setitem__((0, 3), np.nan), "image 2, reference 0, position 0: a score is NaN"),
])
def test_from_log_probs_errors_name_image_and_reference(edit, message):
    logits, targets, starts = random_model(seed=5)
    for refs in targets:  # every reference at least 2 positions, so that edits apply
        refs[:] = [np.r_[t, 0] for t in refs]
    for refs in starts:
        refs[:] = [np.r_[s, True] for s in refs]
    logits = [[np.vstack([x, x[-1:]]) for x in refs] for refs in logits]
    edit(logits, targets, starts)
    with pytest.raises(ValueError, match=message):
        RefProbs.from_log_probs(logits, targets, starts, logits=True)


def test_unnormalized_log_probs_and_bad_token_scores_are_refused():
    logits, targets, _ = random_model(seed=6)
    with pytest.raises(ValueError, match="image 0, reference 0, position 0: the probabilities sum to .* logits=True"):
        RefProbs.from_log_probs([[x + 3 for x in refs] for refs in logits], targets)
    with pytest.raises(ValueError, match="image 0, reference 0: 2 log-probabilities but 1 ranks: a tokenization"):
        RefProbs.from_token_scores([[[-1.0, -2.0]]], [[[0]]])
    with pytest.raises(ValueError, match="image 0, reference 0, position 1: log-probability 0.5 is not <= 0"):
        RefProbs.from_token_scores([[[-1.0, 0.5]]], [[[0, 1]]])
    with pytest.raises(ValueError, match="image 1 has no references"):
        RefProbs.from_token_scores([[[-1.0]], []], [[[0]], []])


def test_from_log_probs_is_exact_enough_with_a_large_float32_vocabulary():
    rng = np.random.default_rng(7)
    logits = [[(3 * rng.normal(size=(3, 30000))).astype(np.float32) for _ in range(2)]]
    targets = [[rng.integers(0, 30000, 3) for _ in range(2)]]
    assert_matches(RefProbs.from_log_probs(logits, targets, logits=True), *oracle(logits, targets, logits=True))
