"""The sweep against the plain-Python oracle, on the spec's example and random ragged inputs,
in both forms of tier 4: over a strata mask and over the partitions' segments.

Tolerances: float64 (jax_enable_x64) rtol 1e-9; float32 rtol 2e-5 (products of up to 21
probabilities and means over thousands of values accumulate a few ulps).
"""
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pregen_jax import RefProbs, tiers
from pregen_jax.strata import spec_strata
from pregen_jax.tiers import oracle
from tests.conftest import covering

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
        assert_close(tiers.sweep(ref_probs, strata, space, method="mask"),
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
        expected = oracle.sweep(ref_probs, strata, space.names, compat)
        for method in ("mask", "segments"):
            assert_close(tiers.sweep(ref_probs, strata, space, method=method), expected, 1e-9, space.names)


def test_float32_sweep_close_to_oracle(x32):
    rng = np.random.default_rng(3)
    images, refs, positions = 200, 5, 21
    lengths = rng.integers(4, positions + 1, (images, refs))
    mask = np.arange(positions) < lengths[..., None]
    probs = rng.uniform(0.05, 1.0, mask.shape).astype(np.float32)
    ranks = np.where(rng.random(mask.shape) < 0.5, 0, 5).astype(np.int32)
    ref_probs = RefProbs(probs, ranks, mask)
    strata = np.stack([np.arange(images) < 100, np.arange(images) >= 100, np.ones(images, bool)])
    expected = oracle.sweep(ref_probs, strata, tiers.DEFAULT_SPACE.names)
    for method in ("mask", "segments"):
        ours = tiers.sweep(ref_probs, strata, method=method)
        assert ours.dtype == np.float32
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

    from pregen_jax.tiers._sorting import stable_argsort
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


# ---------------------------------------------------------------- the segment form
#
# Strata that form partitions go through ``sweep_segment_arrays``. Each structure below fixes
# the segment sizes (what a segment sweep compiles for); hypothesis draws which images fall
# in which segment and every value, so each structure compiles at most twice (all references
# present or not) however many examples run.

SEG_IMAGES = 7


def _trimmed_mean(values, mask):
    """The README's example: mean without the lowest and highest value (plain mean below 3)."""
    n = mask.sum(-1, keepdims=True)
    position = jnp.cumsum(mask, -1) - 1
    inner = mask & (((position > 0) & (position < n - 1)) | (n < 3))
    return jnp.sum(jnp.where(inner, values, 0.0), -1) / jnp.maximum(inner.sum(-1), 1)


def _oracle_trimmed_mean(values):
    ordered = sorted(values)
    inner = ordered[1:-1] if len(ordered) >= 3 else ordered
    return sum(inner) / len(inner)


@pytest.fixture(scope="module", params=["sorted", "any_order"])
def segment_space(request):
    """Every built-in aggregator in tier 4 and a user-registered one in tier 3, and in tier 4
    too ("sorted": the sweep sorts each segment) or not ("any_order": every tier-4 aggregator
    takes unsorted rows, the median by radix selection)."""
    tiers.register_aggregator("trimmed_mean")(_trimmed_mean)
    builtin = ("sum", "mean", "median", "geomean", "max", "min")
    yield tiers.Space.from_names(filters=("none", "prefix0"), caption_scores=("prob", "pplx", "count"),
                                 image_aggregators=("median", "geomean", "trimmed_mean", "join"),
                                 dataset_aggregators=builtin + (("trimmed_mean",) if request.param == "sorted" else ()))
    tiers.REGISTRIES[3].remove("trimmed_mean"), tiers.REGISTRIES[4].remove("trimmed_mean")


def oracle_sweep(ref_probs, strata, space):
    """``oracle.sweep`` for any space whose functions the oracle knows, plus ``trimmed_mean``."""
    def aggregate(values, name):
        return _oracle_trimmed_mean(values) if name == "trimmed_mean" else oracle.aggregate(values, name)

    refs = oracle.to_lists(ref_probs)
    out = np.empty((len(strata), len(space)))
    for s, row in enumerate(strata):
        for c, name in enumerate(space.names):
            tier4, tier3, tier2, tier1 = tiers.parse_metric_name(name)
            image_scores, caption_scores = [], []
            for i in np.flatnonzero(row):
                scores = [oracle.caption_score(oracle._kept([p for p, _ in ref], [k for _, k in ref], tier1, False),
                                                len(ref), tier2) for ref in refs[i]]
                if tier3 == "join":
                    caption_scores.extend(scores)
                else:
                    image_scores.append(aggregate(scores, tier3))
            out[s, c] = aggregate(caption_scores if tier3 == "join" else image_scores, tier4)
    return out


def _blocks(order, sizes):
    """Segment ids: consecutive blocks of ``order`` with the given sizes; the rest -1."""
    ids = np.full(len(order), -1, np.int32)
    start = 0
    for k, size in enumerate(sizes):
        ids[order[start:start + size]] = k
        start += size
    return ids


def structure(name, order):
    """Partitions of SEG_IMAGES images ranked by ``order``."""
    if name == "spec":  # k = 1..5 blocks of 7 // k images: remainders left out, runs of one order
        return tiers.Partitions(np.stack([_blocks(order, [SEG_IMAGES // k] * k) for k in range(1, 6)]))
    if name == "uneven":  # runs of one order, segments of different sizes: padded rows
        return tiers.Partitions(np.stack([_blocks(order, [4, 2]), _blocks(order, [1, 6])]))
    if name == "crossing":  # no common order makes every segment a run: gathered members
        crossing = np.full(SEG_IMAGES, -1, np.int32)
        crossing[order] = [0, 1, 2, 0, 1, 2, 2]
        return tiers.Partitions(np.stack([_blocks(order, [3, 3]), crossing]))
    raise ValueError(name)


@st.composite
def segment_inputs(draw):
    probs = np.zeros((SEG_IMAGES, MAX_REFS, MAX_POSITIONS))
    ranks = np.zeros((SEG_IMAGES, MAX_REFS, MAX_POSITIONS), np.int32)
    mask = np.zeros((SEG_IMAGES, MAX_REFS, MAX_POSITIONS), bool)
    prob = st.one_of(st.just(0.0), st.just(1.0), st.just(0.5), st.floats(0.02, 1.0))  # 0: inf pplx; ties
    rank = st.sampled_from([0, 0, 1, 2, 7])
    for i in range(SEG_IMAGES):
        for r in range(draw(st.integers(1, MAX_REFS))):
            length = draw(st.integers(1, MAX_POSITIONS))
            mask[i, r, :length] = True
            probs[i, r, :length] = draw(st.lists(prob, min_size=length, max_size=length))
            ranks[i, r, :length] = draw(st.lists(rank, min_size=length, max_size=length))
    order = np.array(draw(st.permutations(range(SEG_IMAGES))))
    return RefProbs(probs, ranks, mask), order


@pytest.mark.parametrize("segment_space, name, runs", covering(  # each order and each layout; all 6 with -m slow
    [(order, *layout) for order in ("sorted", "any_order") for layout in (("spec", True), ("uneven", True), ("crossing", False))],
    [("sorted", "spec", True), ("any_order", "uneven", True), ("any_order", "crossing", False)]), indirect=["segment_space"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(inputs=segment_inputs())
def test_segment_sweep_equals_oracle(x64, segment_space, name, runs, inputs):
    ref_probs, order = inputs
    partitions = structure(name, order)
    layout, _ = tiers.plan_segments(partitions, ref_probs.ref_mask)
    assert (layout.runs is not None) == runs
    expected = oracle_sweep(ref_probs, partitions.mask, segment_space)
    assert_close(tiers.sweep(ref_probs, partitions, segment_space, method="segments"), expected, 1e-9,
                 segment_space.names)


def test_segment_and_mask_forms_agree_in_float32(x32):
    rng = np.random.default_rng(4)
    mask = np.arange(21) < rng.integers(4, 22, (203, 5))[..., None]
    mask[::7, 3:] = False  # some images with fewer references
    ref_probs = RefProbs(rng.uniform(0.05, 1, mask.shape).astype(np.float32),
                         np.where(rng.random(mask.shape) < 0.5, 0, 3).astype(np.int32), mask)
    strata = spec_strata(rng.random(203)).mask
    segments = tiers.sweep(ref_probs, strata)  # "auto" picks the segment form for the spec's strata
    assert_close(segments.astype(np.float64), tiers.sweep(ref_probs, strata, method="mask").astype(np.float64),
                 1e-5, tiers.DEFAULT_SPACE.names)


def test_partitions_from_the_spec_strata():
    strata = spec_strata(np.arange(23.0))
    partitions = tiers.Partitions.from_mask(strata.mask)
    assert partitions.num_segments == (1, 2, 3, 4, 5)
    np.testing.assert_array_equal(partitions.mask, strata.mask)
    # 23 images: k blocks of 23 // k, the top remainder in no segment (-1).
    np.testing.assert_array_equal(partitions.segment_ids[3], np.repeat([0, 1, 2, 3, -1], [5, 5, 5, 5, 3]))
    layout, order = tiers.plan_segments(partitions, np.ones((23, 5), bool))
    assert [s.length for s in layout.images] == [23, 11, 7, 5, 4]
    assert all(s.exact for s in layout.images + layout.captions)
    np.testing.assert_array_equal(order, np.arange(23))
    assert tiers.sweep(RefProbs(np.full((23, 1, 1), 0.5), np.zeros((23, 1, 1), np.int32), np.ones((23, 1, 1), bool)),
                       partitions).shape == (15, 504)


def test_partitions_errors():
    with pytest.raises(ValueError, match="partition 0: segment 1 has no images"):
        tiers.Partitions(np.array([[0, 2, 2, -1]]))
    with pytest.raises(ValueError, match="segment number"):
        tiers.Partitions(np.array([[0, -2]]))
    ref_probs, _ = edge_case("all_top")
    with pytest.raises(ValueError, match="cover 3 images"):
        tiers.sweep(ref_probs, tiers.Partitions(np.array([[0, 0, 1]])))
    with pytest.raises(ValueError, match="method"):
        tiers.sweep(ref_probs, method="fast")


def test_sweep_compiles_once_per_shape_and_structure():
    space = tiers.Space.from_names(filters=("none", "filter0"), caption_scores=("prob",),  # fresh caches
                                   image_aggregators=("median", "join"), dataset_aggregators=("mean", "median"))
    rng = np.random.default_rng(8)
    for _ in range(3):  # new values and a new ranking of the images each time
        mask = np.arange(5) < rng.integers(1, 6, (31, 3))[..., None]
        ref_probs = RefProbs(rng.uniform(0, 1, mask.shape), rng.integers(0, 3, mask.shape), mask)
        strata = spec_strata(rng.random(31)).mask
        tiers.sweep(ref_probs, strata, space)
        tiers.sweep(ref_probs, strata, space, method="mask")
    assert tiers.compiled_segment_sweep(space)._cache_size() == 1
    assert tiers.compiled_sweep(space)._cache_size() == 1


@pytest.mark.parametrize("n", [1, 2, 5, 16, 40])  # sorting networks up to 16 entries, XLA's sort above
def test_sort_masked_matches_numpy(n):
    import jax

    from pregen_jax.tiers._sorting import sort_masked
    rng = np.random.default_rng(n)
    values = np.round(rng.normal(size=(50, n)), 1).astype(np.float32)  # many ties
    values[0, :3] = [np.inf, -0.0, 0.0][:n]
    values[1, -1] = np.nan
    mask = rng.random((50, n)) < 0.6  # scattered, not a prefix
    mask[:, 0] |= ~mask.any(1)
    ours, prefix = jax.jit(sort_masked)(values, mask)
    for row, keep, got, first in zip(values, mask, np.asarray(ours), np.asarray(prefix)):
        want = np.sort(row[keep])  # NaN last, as numpy sorts
        np.testing.assert_array_equal(got[:keep.sum()], want)
        np.testing.assert_array_equal(got[keep.sum():], want[-1])  # padding repeats the largest value
        np.testing.assert_array_equal(first, np.arange(n) < keep.sum())


@pytest.mark.parametrize("use_x64", [False, True])
@pytest.mark.parametrize("n", [1, 2, 9, 1000, 70000])  # 70,000: counts too large to pack two per int32
def test_median_any_order_equals_the_sorted_median(use_x64, n):
    import jax

    from pregen_jax.tiers._builtins import agg_median
    from pregen_jax.tiers._selection import median_any_order
    from pregen_jax.tiers._sorting import sort_masked
    rng = np.random.default_rng(n)
    rows = 4 if n > 1000 else 40
    pool = np.array([0.0, -0.0, 1e-38, 1e-45, 0.5, 1.0, 2.0, np.inf, -np.inf, -3.0, np.nan])
    values = np.where(rng.random((rows, n)) < 0.5, rng.choice(pool, (rows, n)) * rng.uniform(0.5, 1.5, (rows, n)),
                      rng.normal(size=(rows, n)))  # special values, ties and plain ones
    mask = rng.random((rows, n)) < 0.7
    mask[:, 0] = True
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", use_x64)
    try:
        values = values.astype(np.float64 if use_x64 else np.float32)
        want = np.asarray(jax.jit(lambda v, m: agg_median(*sort_masked(v, m)))(values, mask))
        got = np.asarray(jax.jit(median_any_order)(values, mask))
    finally:
        jax.config.update("jax_enable_x64", previous)
    assert got.dtype == values.dtype
    np.testing.assert_array_equal(got, want)  # an entry of the row (or the mean of two), as the sort gives
