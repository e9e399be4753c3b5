"""How the rewards are called (pregen_jax.rewards.interop, reward, critic): ids that never wrap on
any path (numpy, DLPack, JAX, traced inside the caller's jit, the self-critical forms), the
caller's kind of array back, and a few fixed shapes so a loop does not recompile per batch size.

The DLPack path a torch tensor takes is run here with numpy arrays (numpy exports DLPack) and
with a minimal stand-in library (``fake_tensors``: a class that speaks only DLPack and has
``min``, ``max``, ``dtype``, ``shape``, ``device``, and a module with ``from_dlpack``), as torch
is not in the lock; the same checks with real torch tensors: ``docs/guides/rewards.md``.
"""
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax.rewards import Bleu, CiderD, SelfCritical
from pregen_jax.rewards import reward as reward_module
from pregen_jax.rewards.ngrams import MAX_ID
from tests import ciderd_reference as ref

REFERENCES = [[[1, 2, 3, 0], [1, 2, 4, 0]], [[5, 6, 0], [5, 7, 6, 0]], [[3, 3, 9]]]
VOCAB = 10
STRINGS = [[ref.array_to_str(r) for r in refs] for refs in REFERENCES]


class _Tensor:
    """An array of a library JAX does not know, that speaks DLPack only (as a torch tensor does)."""

    __module__ = "fake_tensors"

    def __init__(self, array: np.ndarray):
        self.array, self.device = array, "cpu"

    dtype = property(lambda self: self.array.dtype)
    shape = property(lambda self: self.array.shape)

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def min(self):
        return self.array.min()

    def contiguous(self):
        return _Tensor(np.ascontiguousarray(self.array))

    def __getitem__(self, key):
        return _Tensor(self.array[key])

    def reshape(self, *shape):
        return _Tensor(self.array.reshape(*shape))

    def max(self):
        return self.array.max()


@pytest.fixture(scope="module")
def fake_tensors():
    module = types.ModuleType("fake_tensors")
    module.from_dlpack = lambda x: _Tensor(np.from_dlpack(x))
    sys.modules["fake_tensors"] = module
    yield module
    del sys.modules["fake_tensors"]


@pytest.fixture(scope="module")
def rewards():
    return CiderD(REFERENCES, vocab_size=VOCAB), Bleu(REFERENCES, vocab_size=VOCAB), CiderD(REFERENCES)


ROWS = np.array([[1, 2, 3, 0, 0], [5, 6, 0, 0, 0], [3, 3, 9, 9, 9], [1, 2, 4, 0, 7]], np.int64)
IMAGES = np.array([0, 1, 2, 0], np.int64)


@pytest.mark.parametrize("kind", ["numpy", "numpy-readonly", "jax", "list", "dlpack"])
def test_every_path_gives_the_same_rewards_as_the_callers_kind(rewards, kind, fake_tensors):
    cider, bleu, _ = rewards
    want = np.asarray(cider(jnp.asarray(ROWS), jnp.asarray(IMAGES)))
    assert np.isfinite(want).all() and want[0] > 1 and want[3] > 1
    rows = {"numpy": ROWS, "numpy-readonly": ROWS.copy(), "jax": jnp.asarray(ROWS), "list": ROWS.tolist(),
            "dlpack": _Tensor(ROWS)}[kind]
    if kind == "numpy-readonly":
        rows.flags.writeable = False
    got = cider(rows, IMAGES)
    expected_type = {"numpy": np.ndarray, "numpy-readonly": np.ndarray, "dlpack": _Tensor}.get(kind, jax.Array)
    assert isinstance(got, expected_type), type(got)
    as_numpy = got.array if kind == "dlpack" else np.asarray(got)
    assert as_numpy.shape == (4,)
    np.testing.assert_allclose(as_numpy, want, rtol=1e-6)
    bleu_scores = bleu(rows, IMAGES)
    assert isinstance(bleu_scores, expected_type)
    assert np.isfinite(bleu_scores.array if kind == "dlpack" else np.asarray(bleu_scores)).all()


WRAPPING = {  # an id the reward must refuse, and why it would otherwise be a score
    "the vocabulary": VOCAB,                 # in the keys' range: a silent score of an unknown word
    "exact keys": MAX_ID + 1,                # id + 1 = 65,536 wraps the 16-bit half of a key to 0
    "int32 from int64": 2 ** 32 + 5,         # JAX without x64 reads int64 as int32: 5
    "negative": -1,
}


@pytest.mark.parametrize("kind", ["numpy", "jax", "dlpack", "list"])
@pytest.mark.parametrize("what", list(WRAPPING))
def test_an_id_out_of_range_is_an_error_before_the_jitted_call(rewards, kind, what, fake_tensors, monkeypatch):
    cider, bleu, open_vocab = rewards
    if kind == "jax" and WRAPPING[what] > np.iinfo(np.int32).max:
        pytest.xfail("JAX without x64 holds no such id: the caller's own array refuses it")
    rows = ROWS.copy()
    rows[2, 4] = WRAPPING[what]
    rows = {"numpy": rows, "jax": jnp.asarray(rows), "dlpack": _Tensor(rows), "list": rows.tolist()}[kind]
    calls = []
    monkeypatch.setattr(reward_module, "_row_rewards", lambda *a: calls.append(a))
    for reward in (cider, bleu) if what == "the vocabulary" else (cider, bleu, open_vocab):
        with pytest.raises(ValueError, match=r"samples: ids must lie in 0\.\.(9|65534); found"):
            reward(rows, IMAGES)
    assert calls == []


def test_bad_image_index_and_non_integer_ids_are_refused(rewards):
    cider = rewards[0]
    with pytest.raises(ValueError, match=r"image_index: ids must lie in 0\.\.2; found 0\.\.3"):
        cider(ROWS, np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="must be integers, not float32"):
        cider(ROWS.astype(np.float32), IMAGES)
    with pytest.raises(ValueError, match=r"need \[B, T\] and \[B\]"):
        cider(ROWS, IMAGES[:3])


def test_traced_inside_the_callers_jit_a_bad_row_is_nan_never_a_score(rewards):
    """(Bleu and SelfCritical share this path: RowReward.rewards; the self-critical forms below.)"""
    cider, _, open_vocab = rewards
    rows = ROWS.copy()
    rows[1, 4] = VOCAB             # after the end token: still refused (every position is checked)
    rows[2, 1] = 70_000            # wraps in the keys
    index = np.array([0, 1, 2, 5])  # image 5 does not exist: gathers would clamp it to image 2

    @jax.jit
    def inside(cider, open_vocab, rows, index):
        return cider(rows, index), open_vocab(rows, index)

    got, opened = map(np.asarray, inside(cider, open_vocab, jnp.asarray(rows, jnp.int32), jnp.asarray(index)))
    assert np.isnan(got[1:]).all()  # row 0 is good and scored as outside jit
    np.testing.assert_allclose(got[0], np.asarray(cider(ROWS[:1], IMAGES[:1]))[0], rtol=1e-6)
    # the open vocabulary (ids up to 65,534) scores id 10 (row 1) but not 70,000 or image 5
    assert np.isfinite(opened[:2]).all() and np.isnan(opened[2:]).all()


@pytest.mark.slow
def test_self_critical_refuses_bad_ids_eagerly_and_gives_nan_traced(rewards):
    cider, bleu, _ = rewards
    critic = SelfCritical(cider, bleu, cider_weight=1.0, bleu_weight=0.5)
    samples = np.array([[1, 2, 3, 0], [1, 2, 0, 0], [5, 6, 0, 0], [5, 5, 0, 0]])
    greedy = np.array([[1, 2, 0], [5, 0, 0]])
    images = np.array([0, 1])
    with pytest.raises(ValueError, match=r"greedy: ids must lie in 0\.\.9; found 0\.\.12"):
        critic.advantage_over_greedy(samples, greedy + np.array([[0, 0, 12], [0, 0, 0]]), images)
    with pytest.raises(ValueError, match=r"samples: ids must lie"):
        critic.advantage_over_mean(samples - 2, images)
    bad = greedy.copy()
    bad[1, 2] = 11
    traced = jax.jit(lambda c, s, g, i: (c.advantage_over_greedy(s, g, i), c.advantage_over_mean(s, i),
                                         c(s, jnp.repeat(i, 2)), c(g, i)))
    over_greedy, over_mean, score, greedy_score = map(np.asarray, traced(
        critic, jnp.asarray(samples), jnp.asarray(bad), jnp.asarray(images)))
    assert over_greedy.shape == (4,) and np.isnan(over_greedy[2:]).all() and np.isnan(greedy_score[1])
    np.testing.assert_allclose(over_greedy[:2], score[:2] - greedy_score[0], rtol=1e-6)
    np.testing.assert_allclose(over_mean, score - score.reshape(2, 2)[:, ::-1].reshape(4), rtol=1e-6)  # K = 2


def test_batches_of_many_sizes_compile_a_few_programs(rewards, fake_tensors):
    """Rows padded to 8, 10, 12, 14, 16, 20, ... and positions to a multiple of 4 (at least 8):
    batches of 1..8 rows of 5..8 positions run one program; 9 rows compile a second; a padded row
    or position changes nothing (a row with no end token within its width has none)."""
    cider = rewards[0]
    rng = np.random.default_rng(0)
    rows = rng.integers(0, VOCAB, (8, 8))
    cider(rows, rng.integers(0, 3, 8))
    compiled = reward_module._row_rewards._cache_size()
    for batch, width in ((1, 5), (3, 8), (5, 6), (7, 7)):
        index = rng.integers(0, 3, batch)
        got = cider(_Tensor(rows[:batch, :width]), index).array
        assert got.shape == (batch,)
        want = ref.cider_d(rows[:batch, :width], index, STRINGS, *ref.document_frequency(STRINGS))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    assert reward_module._row_rewards._cache_size() == compiled
    cider(rows[:1].repeat(9, 0), np.zeros(9, int))
    assert reward_module._row_rewards._cache_size() == compiled + 1
