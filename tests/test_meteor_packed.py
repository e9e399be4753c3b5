"""``packed.Packer`` lays many sentences out exactly as packing them one by one does."""
import numpy as np

from pregen_jax.postgen.meteor import fast
from pregen_jax.postgen.meteor.normalize import normalize
from pregen_jax.postgen.meteor.python import PythonMeteor

LINES = ["A man in a red shirt is climbing a rock .", "two dogs play in the snow", "",
         "a a a a dog dog", "Zyxwvut qwertyuiop are not words", "the children were running and jumping",
         "a group of people standing in front of a building", "A man is sitting on a bench ."]


def one_by_one(meteor: PythonMeteor, sentences: list) -> tuple:
    return fast.concatenate_sentences([meteor._analysed(s)[1] for s in sentences])


def assert_same_layout(got: tuple, want: tuple) -> None:
    (offsets, data), (want_offsets, want_data) = got, want
    assert np.array_equal(offsets, want_offsets)
    for k, (a, b) in enumerate(zip(data, want_data)):
        assert a.dtype == b.dtype and np.array_equal(a, b), k


def test_packing_together_equals_packing_one_by_one():
    meteor = PythonMeteor()
    meteor.load()
    sentences = list(dict.fromkeys(normalize(line) for line in LINES))
    sentences.append(tuple("a man rides a horse on the beach near the water".split() * 15))  # past 128 words
    assert_same_layout(meteor._packer.pack(sentences), one_by_one(meteor, sentences))
    # a second batch with words seen and unseen: the kept word features extend, the layout holds
    later = [normalize("the dogs were running on the beach"), normalize("brand-new unseenword climbing")]
    assert_same_layout(meteor._packer.pack(later), one_by_one(meteor, later))


def test_an_empty_batch_packs_to_empty_arrays():
    meteor = PythonMeteor()
    meteor.load()
    offsets, data = meteor._packer.pack([])
    assert offsets.shape == (1, 10) and not offsets.any() and all(len(a) == 0 for a in data)
