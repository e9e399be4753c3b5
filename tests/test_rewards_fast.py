"""Fast guards, in the default test command, of reward behaviours that only slow tests held before
issue 63 (tests/test_rewards.py keeps the full-size versions): CIDEr-D with several samples per
image keeps the document frequencies of the distinct images; BLEU-4 on real captions equals
pycocoevalcap's per sentence (the end token appended to every reference, as the Python reward's
prepro_ngrams does; samples read as array_to_str reads them); ``end="never"`` leaves the end token out of both rewards. Tiny
sizes (30 Flickr8k images, a dozen edge cases), float64, each compared with the Python reward
(tests/ciderd_reference.py) and shown to differ from what the broken behaviour would give."""
import numpy as np
import pytest

from pregen_jax.datasets import tokenize
from pregen_jax.rewards import Bleu, CiderD
from tests import ciderd_reference as ref
from tests.conftest import shared

IMAGES, T = 30, 16
MODELS = ("init_1", "par_1", "merge_1")


@pytest.fixture(scope="module")
def small_flickr():
    """(references: ids per image, their strings, samples i32[3 x 30, T], image index i64[90]) for
    the first 30 where-image2 test images and three models' captions, shuffled (seed 0)."""
    folder = shared("where-image2-captions")
    images = (folder / "imgs_flickr8k.txt").read_text().split()[:IMAGES]
    wanted, by_image = set(images), {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        if key.split("#")[0] in wanted:
            by_image.setdefault(key.split("#")[0], []).append(tokenize(caption))
    captions = [[tokenize(c) for c in (folder / f"flickr8k_{m}.txt").read_text(encoding="utf-8").splitlines()[:IMAGES]]
                for m in MODELS]
    vocab: dict[str, int] = {}
    for words in [r for i in images for r in by_image[i]] + [c for model in captions for c in model]:
        for w in words:
            vocab.setdefault(w, len(vocab) + 1)  # 0: the end token
    references = [[[vocab[w] for w in r] for r in by_image[i]] for i in images]
    rows = np.zeros((len(MODELS) * IMAGES, T), np.int32)  # a caption of T words or more keeps no end token
    for k, caption in enumerate(c for model in captions for c in model):
        ids = [vocab[w] for w in caption][:T]
        rows[k, :len(ids)] = ids
    image = np.tile(np.arange(IMAGES), len(MODELS))
    order = np.random.default_rng(0).permutation(len(rows))
    strings = [[ref.reference_str(r) for r in refs] for refs in references]
    return references, strings, rows[order], image[order]


def ended(references):
    """Each reference with its end token, as self-critical.pytorch's references are (issue 60: a row's
    own 0 ends it; the rewards append nothing by default)."""
    return [[[*r, 0] for r in refs] for refs in references]


def test_cider_d_with_several_samples_per_image_keeps_the_images_document_frequencies(small_flickr, x64):
    references, strings, rows, image = small_flickr
    df, images = ref.document_frequency(strings)
    want = ref.cider_d(rows, image, strings, df, images)
    got = CiderD(ended(references))(rows, image)
    assert got.dtype == np.float64 and np.abs(got - want).max() <= 1e-12
    assert 0.1 < want.mean() < 3  # real scores, not zeros
    # the broken behaviour: frequencies over the 90 (sample, references) pairs, as a plain CiderScorer counts
    pairs = ref.CiderScorer()
    for row, i in zip(rows, image):
        pairs += (ref.array_to_str(row), strings[i])
    assert np.abs(pairs.compute_score()[1] - want).max() > 1e-3


def test_bleu_4_on_real_captions_equals_pycocoevalcap_per_sentence(small_flickr, x64):
    references, strings, rows, image = small_flickr
    want = ref.bleu(rows, image, strings)
    got = np.asarray(Bleu(ended(references))(rows, image), np.float64)
    assert np.abs(got - want).max() <= 1e-12 and 0.05 < want.mean() < 1
    assert np.abs(ref.bleu(rows, image, strings, order=3) - want).max() > 1e-3  # BLEU-4, not another order


def _edge_cases():
    """Eight images with 1..4 references of 1..6 ids, and samples: empty, ending early, with no end
    token, a copy of a reference, repeated words."""
    rng = np.random.default_rng(5)
    references = [[list(rng.integers(1, 7, rng.integers(1, 7))) for _ in range(rng.integers(1, 5))] for _ in range(8)]
    rows = np.zeros((16, 12), np.int64)
    image = np.arange(16) % 8
    for k in range(16):
        length = rng.integers(1, 8)
        rows[k, :length] = rng.integers(1, 7, length)
    rows[0] = 0                                          # empty
    rows[1] = rng.integers(1, 7, 12)                     # no end token
    rows[2, :len(references[2][0])] = references[2][0]   # a copy of a reference, then the end token
    rows[3, :9] = 3                                      # one repeated word
    return references, rows, image


def test_end_never_leaves_the_end_token_out_of_both_rewards(x64):
    references, rows, image = _edge_cases()
    strings = [[ref.reference_str(r, count_end=False) for r in refs] for refs in references]
    samples = []
    for row in rows:  # the sample's string less its end id
        words = ref.array_to_str(row).split()
        samples.append(" ".join(words[:-1] if words[-1] == "0" else words))
    df, images = ref.document_frequency(strings)
    cider, bleu = ref.CachedCiderD(df, images), ref.BleuScorer(n=4)
    for sample, i in zip(samples, image):
        cider += (sample, strings[i])
        bleu += (sample, strings[i])
    want_cider, want_bleu = cider.compute_score()[1], bleu.compute_score(option="closest")[1][3]
    got_cider = np.asarray(CiderD(references, end="never")(rows, image), np.float64)
    got_bleu = np.asarray(Bleu(references, end="never")(rows, image), np.float64)
    assert np.abs(got_cider - want_cider).max() <= 1e-12 and np.abs(got_bleu - np.asarray(want_bleu)).max() <= 1e-12
    assert got_cider[2] > 0 and got_cider[0] == 0.0  # a copy scores, an empty sample scores nothing
    # the broken behaviour, the end token counted, gives other rewards (Python's, no second compile)
    counted = [[ref.reference_str(r) for r in refs] for refs in references]
    df, images = ref.document_frequency(counted)
    assert np.abs(ref.cider_d(rows, image, counted, df, images) - want_cider).max() > 1e-3
