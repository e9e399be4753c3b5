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
