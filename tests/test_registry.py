"""Every registered tier function, built-in or a user's, gets the same checks; extension works."""
import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax import RefProbs, tiers
from pregen_jax.tiers import oracle


def aggregators():
    seen = []
    for tier in (3, 4):
        for fn in tiers.REGISTRIES[tier].values():
            if not fn.is_join and fn.name not in [s.name for s in seen]:
                seen.append(fn)
    return seen


@pytest.mark.parametrize("agg", aggregators(), ids=lambda f: f.name)
def test_aggregator_mask_equals_slice_and_jit_equals_eager(agg):
    rng = np.random.default_rng(0)
    values = jnp.sort(jnp.asarray(rng.uniform(0.1, 5, (4, 9)), jnp.float32), axis=-1)
    lengths = np.array([1, 4, 7, 9])
    mask = jnp.asarray(np.arange(9) < lengths[:, None])
    masked = agg.fn(values, mask)
    np.testing.assert_allclose(jax.jit(agg.fn)(values, mask), masked, rtol=1e-6)
    for row, n in enumerate(lengths):
        sliced = agg.fn(values[row:row + 1, :n], jnp.ones((1, n), bool))
        np.testing.assert_allclose(masked[row], sliced[0], rtol=1e-6)


@pytest.mark.parametrize("fn", list(tiers.REGISTRIES[1].values()) + list(tiers.REGISTRIES[2].values()),
                         ids=lambda f: f"tier{f.tier}-{f.name}")
def test_filters_and_caption_scores_ignore_padding(fn):
    rng = np.random.default_rng(1)
    probs = jnp.asarray(rng.uniform(0.1, 1, (3, 5)), jnp.float32)
    ranks = jnp.asarray(rng.choice([0, 1, 2], (3, 5)), jnp.int32)
    mask = jnp.asarray(np.arange(5) < np.array([[2], [5], [3]]))
    padded_probs = jnp.concatenate([probs, jnp.full((3, 4), 0.3)], -1)
    padded_ranks = jnp.concatenate([ranks, jnp.ones((3, 4), jnp.int32)], -1)
    padded_mask = jnp.concatenate([mask, jnp.zeros((3, 4), bool)], -1)
    if fn.tier == 1:
        short, long = fn.fn(probs, ranks, mask), fn.fn(padded_probs, padded_ranks, padded_mask)
        np.testing.assert_array_equal(short & mask, (long & padded_mask)[:, :5])
        np.testing.assert_array_equal(jax.jit(fn.fn)(probs, ranks, mask), short)
    else:
        keep = mask & (ranks == 0)
        padded_keep = padded_mask & (padded_ranks == 0)
        short = fn.fn(probs, keep, mask)
        np.testing.assert_allclose(fn.fn(padded_probs, padded_keep, padded_mask), short, rtol=1e-6)
        np.testing.assert_allclose(jax.jit(fn.fn)(probs, keep, mask), short, rtol=1e-6)


def _top2prefix(probs, ranks, mask):
    """The longest prefix whose true tokens all rank in the model's top 2."""
    return mask & (jnp.cumsum(mask & (ranks >= 2), axis=-1) == 0)


def _trimmed_mean(values, mask):
    """Mean without the lowest and highest value (plain mean below 3 values); values sorted."""
    n = mask.sum(-1, keepdims=True)
    position = jnp.cumsum(mask, -1) - 1
    inner = mask & (((position > 0) & (position < n - 1)) | (n < 3))
    return jnp.sum(jnp.where(inner, values, 0.0), -1) / jnp.maximum(inner.sum(-1), 1)


@pytest.fixture
def user_functions():
    """Register the README's example functions and remove them afterwards."""
    tiers.register_filter("top2prefix")(_top2prefix)
    tiers.register_aggregator("trimmed_mean", tiers=(3,))(_trimmed_mean)
    yield
    del tiers.REGISTRIES[1]["top2prefix"]
    del tiers.REGISTRIES[3]["trimmed_mean"]


def _oracle_top2prefix(ref):
    kept = []
    for p, k in ref:
        if k >= 2:
            break
        kept.append(p)
    return kept


def test_user_extension_computes_every_new_combination(x64, user_functions):
    space = tiers.DEFAULT_SPACE.extend(filters=["top2prefix"], image_aggregators=["trimmed_mean"])
    assert len(space) == 6 * 8 * 4 * 4
    assert "mean_trimmed_mean_normcount_top2prefix" in space.names
    assert tiers.parse_metric_name("mean_trimmed_mean_normcount_top2prefix") == (
        "mean", "trimmed_mean", "normcount", "top2prefix")
    rng = np.random.default_rng(5)
    mask = np.arange(6) < rng.integers(1, 7, (5, 4))[..., None]
    ref_probs = RefProbs(rng.uniform(0.1, 1, mask.shape), rng.choice([0, 1, 2, 3], mask.shape), mask)
    strata = np.array([[1, 1, 1, 1, 1], [1, 0, 1, 0, 0]], bool)
    scores = tiers.sweep(ref_probs, strata, space)
    assert scores.shape == (2, len(space))
    # The built-in part of the extended space is unchanged.
    base = tiers.sweep(ref_probs, strata)
    idx = [space.names.index(n) for n in tiers.DEFAULT_SPACE.names]
    np.testing.assert_allclose(scores[:, idx], base, rtol=1e-12)
    # A new combination against a hand-written oracle: mean over images of the trimmed mean
    # of the references' top2prefix normcount.
    refs = oracle.to_lists(ref_probs)
    for s, row in enumerate(strata):
        per_image = []
        for i in np.flatnonzero(row):
            caption = sorted(len(_oracle_top2prefix(ref)) / len(ref) for ref in refs[i])
            inner = caption[1:-1] if len(caption) >= 3 else caption
            per_image.append(sum(inner) / len(inner))
        expected = sum(per_image) / len(per_image)
        assert scores[s, space.names.index("mean_trimmed_mean_normcount_top2prefix")] == pytest.approx(expected)


def test_registering_twice_is_an_error(user_functions):
    with pytest.raises(ValueError, match="already registered"):
        tiers.register_filter("top2prefix")(_top2prefix)
    with pytest.raises(ValueError, match="already registered"):
        tiers.register_aggregator("median")(_trimmed_mean)


def test_wrong_shapes_are_errors():
    with pytest.raises(ValueError, match="expected"):
        tiers.register_filter("badfilter")(lambda probs, ranks, mask: mask.any(-1))
    with pytest.raises(ValueError, match="must return bool"):
        tiers.register_filter("badfilter")(lambda probs, ranks, mask: probs)
    with pytest.raises(ValueError, match="reduce the last axis"):
        tiers.register_caption_score("badscore")(lambda probs, keep, mask: probs)
    with pytest.raises(ValueError, match="failed on inputs"):
        tiers.register_aggregator("badagg")(lambda values: values.sum(-1))
    with pytest.raises(ValueError, match="lower-case"):
        tiers.register_filter("Bad-Name")(_top2prefix)
    assert "badfilter" not in tiers.REGISTRIES[1] and "badagg" not in tiers.REGISTRIES[3]


def test_space_errors():
    with pytest.raises(ValueError, match="no tier-1 filter named 'nosuch'"):
        tiers.DEFAULT_SPACE.extend(filters=["nosuch"])
    with pytest.raises(ValueError, match=r"more than once: \['none'\]"):
        tiers.DEFAULT_SPACE.extend(filters=["none"])


def test_sweep_compiles_once_per_shape():
    space = tiers.Space.from_names(filters=("none", "prefix0"))  # a space of its own: fresh cache
    traced = chex.assert_max_traces(tiers.sweep_arrays, n=1)
    compiled = jax.jit(lambda *a: traced(space, *a))
    rng = np.random.default_rng(2)
    for _ in range(3):
        mask = np.arange(4) < rng.integers(1, 5, (7, 2))[..., None]
        args = (jnp.asarray(rng.uniform(0, 1, mask.shape), jnp.float32),
                jnp.asarray(rng.integers(0, 3, mask.shape), jnp.int32), jnp.asarray(mask),
                jnp.asarray(rng.random((3, 7)) < 0.5).at[:, 0].set(True))
        compiled(*args)
    # And the library's own cache holds one compiled function per space.
    assert tiers.compiled_sweep(space) is tiers.compiled_sweep(space)
