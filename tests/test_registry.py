"""Every registered tier function, built-in or a user's, gets the same checks; extension works."""
import contextlib

import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax import RefProbs, tiers
from pregen_jax.tiers import oracle


def pytest_generate_tests(metafunc):
    # Collected when the tests run, after conftest.py files: functions a user registers there
    # get the same checks as the built-in ones.
    if "tier_fn" in metafunc.fixturenames:
        functions = tiers.registered()
        metafunc.parametrize("tier_fn", functions, ids=[f"tier{f.tier}-{f.name}" for f in functions])


def test_registered_function_keeps_the_sweep_contract(tier_fn):
    tiers.check(tier_fn)


def _positional_median(values, mask):
    """Reads the middle slot as if the mask were a prefix: right in a prefix test, wrong in the sweep."""
    n = mask.sum(-1)
    return jnp.take_along_axis(values, ((n - 1) // 2)[..., None], -1)[..., 0]


def _multiplied_sum(values, mask):
    """Masks by multiplying with a float mask: 0.0 * inf is NaN where a masked-out value is +inf."""
    return jnp.sum(values * mask.astype(values.dtype), -1)


def _padding_prefix(probs, ranks, mask):
    """Keeps ranks at most the mean rank, padding included (a filter must not read past the mask)."""
    return ranks <= jnp.mean(ranks, axis=-1, keepdims=True)


@pytest.mark.parametrize("fn, tier, message", [
    (_positional_median, 3, "scattered mask"),
    (_multiplied_sum, 4, "scattered mask"),
    (_padding_prefix, 1, "padding changes the result"),
])
def test_check_catches_functions_that_break_the_contract(fn, tier, message):
    with pytest.raises(ValueError, match=message):
        tiers.check(fn, tier=tier)


def _first_masked(values, mask):
    """The smallest masked value, read as the first masked entry: right only on sorted rows."""
    return jnp.take_along_axis(values, jnp.argmax(mask, -1)[..., None], -1)[..., 0]


@contextlib.contextmanager
def _tier4_aggregator(name: str, function, **facts):
    """``function`` registered as a tier-4 aggregator with an unsorted form while inside."""
    tiers.register_aggregator(name, tiers=(4,), unsorted=True, **facts)(function)
    try:
        yield
    finally:
        tiers.REGISTRIES[4].remove(name)


def test_check_compares_the_unsorted_form_on_shuffled_rows():
    with _tier4_aggregator("firstmasked", _first_masked):
        with pytest.raises(ValueError, match="unsorted= form on shuffled rows"):
            tiers.check("firstmasked")
    with pytest.raises(ValueError, match="unsorted= is for aggregators"):
        tiers.register_filter("keepall", unsorted=True)


def _sum_of_squares(values, mask):
    """Sum of the squared masked values (order-free: it has a ``Parts`` form)."""
    return jnp.sum(jnp.where(mask, values * values, 0.0), -1)


def test_an_aggregator_with_parts_is_checked_and_swept_once_per_image():
    partial = lambda values, mask: (_sum_of_squares(values, mask),)  # noqa: E731
    good = tiers.Parts(partial, lambda stats, mask: jnp.sum(jnp.where(mask, stats[0], 0.0), -1))
    with _tier4_aggregator("sumsq", _sum_of_squares, parts=good):
        tiers.check("sumsq")
        rng = np.random.default_rng(3)
        lengths = [rng.integers(1, 6, 3 - (i % 2)) for i in range(12)]  # odd images: 2 references of 3
        ref_probs = RefProbs.from_lists([[rng.random(n).tolist() for n in row] for row in lengths],
                                        [[rng.integers(0, 3, n).tolist() for n in row] for row in lengths])
        strata = np.zeros((6, 12), bool)
        for row, (a, b) in enumerate([(0, 12), (0, 6), (6, 12), (0, 4), (4, 8), (8, 12)]):
            strata[row, a:b] = True
        space = tiers.DEFAULT_SPACE.extend(dataset_aggregators=["sumsq"])
        by_parts = tiers.sweep(ref_probs, strata, space, method="segments")
        np.testing.assert_allclose(by_parts, tiers.sweep(ref_probs, strata, space, method="mask"), rtol=1e-5)
    wrong = tiers.Parts(partial, lambda stats, mask: jnp.max(jnp.where(mask, stats[0], 0.0), -1))
    with _tier4_aggregator("sumsq", _sum_of_squares, parts=wrong):
        with pytest.raises(ValueError, match="parts= .* differ from it"):
            tiers.check("sumsq")
    with pytest.raises(ValueError, match="parts= is for aggregators"):
        tiers.register_filter("keepall", parts=good)


def test_check_compares_with_the_reference(user_functions):
    tiers.check("trimmed_mean")
    tiers.check("top2prefix")
    tiers.register_aggregator("wrongref", tiers=(3,), reference=lambda values: sum(values))(_trimmed_mean)
    try:
        with pytest.raises(ValueError, match="differs from its reference"):
            tiers.check("wrongref")
    finally:
        tiers.REGISTRIES[3].remove("wrongref")


def test_check_needs_a_tier_for_an_unregistered_function():
    with pytest.raises(ValueError, match="needs its tier"):
        tiers.check(_positional_median)


def _top2prefix(probs, ranks, mask):
    """The longest prefix whose true tokens all rank in the model's top 2."""
    return mask & (jnp.cumsum(mask & (ranks >= 2), axis=-1) == 0)


def _trimmed_mean(values, mask):
    """Mean without the lowest and highest value (plain mean below 3 values); values sorted."""
    n = mask.sum(-1, keepdims=True)
    position = jnp.cumsum(mask, -1) - 1
    inner = mask & (((position > 0) & (position < n - 1)) | (n < 3))
    return jnp.sum(jnp.where(inner, values, 0.0), -1) / jnp.maximum(inner.sum(-1), 1)


def _trimmed_mean_reference(values):
    inner = values[1:-1] if len(values) >= 3 else values
    return sum(inner) / len(inner)


@pytest.fixture
def user_functions():
    """Register the README's example functions and remove them afterwards."""
    tiers.register_filter("top2prefix", reference=lambda probs, ranks: _top2prefix_reference(ranks))(_top2prefix)
    tiers.register_aggregator("trimmed_mean", tiers=(3,), reference=_trimmed_mean_reference)(_trimmed_mean)
    yield
    tiers.REGISTRIES[1].remove("top2prefix")
    tiers.REGISTRIES[3].remove("trimmed_mean")


def _top2prefix_reference(ranks):
    return [all(k < 2 for k in ranks[:t + 1]) for t in range(len(ranks))]


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
