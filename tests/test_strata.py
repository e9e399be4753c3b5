"""Stratification exactly as the spec says."""
import numpy as np
import pytest

from pregen_jax.strata import spec_strata


def test_fifteen_strata_with_remainders_left_out():
    scores = np.arange(13, dtype=float)[::-1]  # image 12 is worst
    strata = spec_strata(scores)
    assert strata.mask.shape == (15, 13)
    assert strata.num_strata.tolist() == [1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 5]
    assert strata.stratum.tolist() == [0, 0, 1, 0, 1, 2, 0, 1, 2, 3, 0, 1, 2, 3, 4]
    sizes = strata.mask.sum(1).tolist()
    assert sizes == [13, 6, 6, 4, 4, 4, 3, 3, 3, 3, 2, 2, 2, 2, 2]
    # k = 2: the worst 6 images, then the next 6; the best image (index 0) is the remainder.
    assert np.flatnonzero(strata.mask[1]).tolist() == [7, 8, 9, 10, 11, 12]
    assert not strata.mask[1:3, 0].any()
    # k = 5: 13 // 5 = 2 per block; the top 3 images are left out.
    assert not strata.mask[10:, :3].any()


def test_ties_keep_image_order():
    scores = np.array([0.5, 0.1, 0.5, 0.1, 0.5, 0.1])
    strata = spec_strata(scores, max_k=2)
    assert np.flatnonzero(strata.mask[1]).tolist() == [1, 3, 5]
    assert np.flatnonzero(strata.mask[2]).tolist() == [0, 2, 4]


def test_blocks_and_errors():
    strata = spec_strata([3.0, 1.0, 2.0, 0.0, 5.0], max_k=2)
    assert strata.blocks(["a", "b", "c", "d", "e"])[1] == ["b", "d"]
    with pytest.raises(ValueError, match="at least 5 images"):
        spec_strata([1.0, 2.0])
    with pytest.raises(ValueError, match="NaN"):
        spec_strata([1.0, np.nan, 2, 3, 4])
