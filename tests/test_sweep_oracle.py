"""The sweep against the plain-Python oracle, on the spec's example and random ragged inputs.

Tolerances: float64 (jax_enable_x64) rtol 1e-9; float32 rtol 2e-5 (products of up to 21
probabilities and means over thousands of values accumulate a few ulps).
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pregen_jax import RefProbs, tiers
from pregen_jax.tiers import oracle

# Fixed padded shapes so that the sweep compiles once per space for all examples; images
# beyond those generated are padding images that no stratum contains.
MAX_IMAGES, MAX_REFS, MAX_POSITIONS, MAX_STRATA = 6, 3, 6, 3
SPACES = [(tiers.DEFAULT_SPACE, False), (tiers.COMPAT_2018, True)]


def assert_close(ours, expected, rtol, names):
    same = (ours == expected) | np.isclose(ours, expected, rtol=rtol, atol=0)
    if not same.all():
        s, c = np.argwhere(~same)[0]
        raise AssertionError(f"{(~same).sum()} mismatches; first: stratum {s}, {names[c]}: "
                             f"sweep {ours[s, c]!r} vs oracle {expected[s, c]!r}")


def worked_example():
    """The spec's worked example: flags 1 = top choice; probabilities irrelevant here."""
    refs = [[(10, [1, 1, 1, 1, 1, 0]), (7, [1, 1, 0])], [(7, [1, 0]), (8, [1, 1, 0])]]
    probs = [[[0.5] * n for n, _ in image] for image in refs]
    ranks = [[[0 if t < len(flags) and flags[t] else 3 for t in range(n)] for n, flags in image] for image in refs]
    return RefProbs.from_lists(probs, ranks)


def test_worked_example():
    scores = tiers.sweep(worked_example())
    names = tiers.DEFAULT_SPACE.names
    assert scores.shape == (1, 504)
    assert scores[0, names.index("mean_max_normcount_prefix0")] == pytest.approx(0.375)
    assert scores[0, names.index("sum_max_normcount_prefix0")] == pytest.approx(0.75)
    assert scores[0, names.index("sum_sum_count_prefix0")] == pytest.approx(5 + 2 + 1 + 2)


@st.composite
def ragged_inputs(draw):
    num_images = draw(st.integers(1, MAX_IMAGES))
    probs = np.zeros((MAX_IMAGES, MAX_REFS, MAX_POSITIONS))
    ranks = np.zeros((MAX_IMAGES, MAX_REFS, MAX_POSITIONS), np.int32)
    mask = np.zeros((MAX_IMAGES, MAX_REFS, MAX_POSITIONS), bool)
    prob = st.one_of(st.just(0.0), st.just(1.0), st.floats(0.02, 1.0))
    rank = st.sampled_from([0, 0, 1, 2, 7])
    for i in range(MAX_IMAGES):
        num_refs = draw(st.integers(1, MAX_REFS)) if i < num_images else 1
        for r in range(num_refs):
            length = draw(st.integers(1, MAX_POSITIONS)) if i < num_images else 1
            mask[i, r, :length] = True
            probs[i, r, :length] = draw(st.lists(prob, min_size=length, max_size=length))
            ranks[i, r, :length] = draw(st.lists(rank, min_size=length, max_size=length))
    strata = np.zeros((MAX_STRATA, MAX_IMAGES), bool)
    for s in range(MAX_STRATA):
        members = draw(st.lists(st.integers(0, num_images - 1), min_size=1, max_size=num_images, unique=True))
        strata[s, members] = True
    return RefProbs(probs, ranks, mask), strata


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ragged_inputs())
def test_sweep_equals_oracle_random(x64, inputs):
    ref_probs, strata = inputs
    for space, compat in SPACES:
        assert_close(tiers.sweep(ref_probs, strata, space),
                     oracle.sweep(ref_probs, strata, space.names, compat), 1e-9, space.names)


def edge_case(kind):
    rng = np.random.default_rng(7)
    probs = rng.uniform(0.05, 1, (MAX_IMAGES, MAX_REFS, MAX_POSITIONS))
    ranks = rng.choice([0, 1, 3], (MAX_IMAGES, MAX_REFS, MAX_POSITIONS)).astype(np.int32)
    lengths = rng.integers(1, MAX_POSITIONS + 1, (MAX_IMAGES, MAX_REFS))
    strata = np.array([[True] * MAX_IMAGES, [True, False] * 3, [False] * 5 + [True]])
    if kind == "zero_probs":
        probs[rng.random(probs.shape) < 0.3] = 0.0
    elif kind == "no_top_choice":
        ranks[:] = 4
    elif kind == "all_top":
        ranks[:] = 0
    elif kind == "one_position":
        lengths[:] = 1
    elif kind == "one_reference":
        lengths[:, 1:] = 0
    elif kind == "all_zero":
        probs[:] = 0.0
    mask = np.arange(MAX_POSITIONS) < lengths[..., None]
    return RefProbs(probs, ranks, mask), strata


@pytest.mark.parametrize("kind", ["zero_probs", "no_top_choice", "all_top", "one_position",
                                  "one_reference", "all_zero"])
def test_sweep_equals_oracle_edge_cases(x64, kind):
    ref_probs, strata = edge_case(kind)
    for space, compat in SPACES:
        assert_close(tiers.sweep(ref_probs, strata, space),
                     oracle.sweep(ref_probs, strata, space.names, compat), 1e-9, space.names)


def test_float32_sweep_close_to_oracle(x32):
    rng = np.random.default_rng(3)
    images, refs, positions = 200, 5, 21
    lengths = rng.integers(4, positions + 1, (images, refs))
    mask = np.arange(positions) < lengths[..., None]
    probs = rng.uniform(0.05, 1.0, mask.shape).astype(np.float32)
    ranks = np.where(rng.random(mask.shape) < 0.5, 0, 5).astype(np.int32)
    ref_probs = RefProbs(probs, ranks, mask)
    strata = np.stack([np.arange(images) < 100, np.arange(images) >= 100, np.ones(images, bool)])
    ours = tiers.sweep(ref_probs, strata)
    assert ours.dtype == np.float32
    expected = oracle.sweep(ref_probs, strata, tiers.DEFAULT_SPACE.names)
    assert_close(ours.astype(np.float64), expected, 2e-5, tiers.DEFAULT_SPACE.names)


def test_x64_gives_float64(x64):
    ref_probs, strata = edge_case("zero_probs")
    assert tiers.sweep(ref_probs, strata).dtype == np.float64


def test_compat_filter0_keeps_the_misses():
    ref_probs = RefProbs.from_lists([[[0.5, 0.5, 0.5]]], [[[0, 2, 0]]])
    paper = tiers.sweep(ref_probs)[0]
    compat = tiers.sweep(ref_probs, space=tiers.COMPAT_2018)[0]
    i = tiers.DEFAULT_SPACE.names.index("sum_sum_count_filter0")
    assert (paper[i], compat[i]) == (2.0, 1.0)
    assert tiers.COMPAT_2018.names == tiers.DEFAULT_SPACE.names


def test_sweep_validates_strata():
    ref_probs, _ = edge_case("all_top")
    with pytest.raises(ValueError, match="stratum 1 has no images"):
        tiers.sweep(ref_probs, np.array([[True] * MAX_IMAGES, [False] * MAX_IMAGES]))
    with pytest.raises(ValueError, match="images"):
        tiers.sweep(ref_probs, np.ones((2, 3), bool))


@pytest.mark.parametrize("use_x64", [False, True])
def test_stable_argsort_matches_numpy(use_x64):
    import jax

    from pregen_jax.tiers._sweep import stable_argsort
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", use_x64)
    try:
        rng = np.random.default_rng(11)
        values = np.round(rng.normal(size=(7, 300)), 1)  # many ties
        values[0, :5] = [np.inf, -np.inf, 0.0, -0.0, np.inf]
        dtype = np.float64 if use_x64 else np.float32
        ours = np.asarray(jax.jit(stable_argsort)(values.astype(dtype)))
        np.testing.assert_array_equal(ours[1:], np.argsort(values.astype(dtype)[1:], axis=-1, kind="stable"))
        np.testing.assert_array_equal(np.sort(values.astype(dtype), -1), np.take_along_axis(values.astype(dtype), ours, -1))
    finally:
        jax.config.update("jax_enable_x64", previous)
