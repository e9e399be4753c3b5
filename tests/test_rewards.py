"""The device rewards (pregen_jax.rewards) equal the Python ones on the same id strings:
CIDEr-D equals pycocoevalcap's CiderScorer (document frequencies from the scored images) and
self-critical.pytorch's ciderD with a cached document frequency over distinct images
(tests/ciderd_reference.py), BLEU-4 equals pycocoevalcap's per-sentence BleuScorer; <= 1e-12
in float64, <= 1e-5 max(1, |r|) in float32; on Flickr8k's references with the where-image2
captions as ids, and on edge cases; inside jit, with no host callback."""
import numpy as np
import pytest
from pycocoevalcap.cider.cider_scorer import CiderScorer

from pregen_jax.datasets import tokenize
from pregen_jax.rewards import Bleu, CiderD, DocumentFrequency
from pregen_jax.rewards.ngrams import MAX_ID
from tests import ciderd_reference as ref
from tests.conftest import shared

MODELS = ("init_1", "pre_1", "par_1", "merge_1")
T = 20


def assert_close(got, want, float64: bool):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape and np.isfinite(got).all()
    limit = 1e-12 if float64 else 1e-5 * np.maximum(1.0, np.abs(want))
    assert (np.abs(got - want) <= limit).all(), float(np.max(np.abs(got - want)))


@pytest.fixture(scope="module")
def flickr():
    """(references: ids per test image, their strings, {model: samples i32[1000, T]}, vocabulary)."""
    folder = shared("where-image2-captions")
    images = (folder / "imgs_flickr8k.txt").read_text().split()
    by_image: dict = {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        by_image.setdefault(key.split("#")[0], []).append(tokenize(caption))
    captions = {m: [tokenize(c) for c in (folder / f"flickr8k_{m}.txt").read_text(encoding="utf-8").splitlines()]
                for m in MODELS}
    words = sorted({w for i in images for r in by_image[i] for w in r} | {w for c in captions.values() for s in c for w in s})
    vocab = {w: k + 1 for k, w in enumerate(words)}  # 0: the end token
    references = [[[*(vocab[w] for w in r), 0] for r in by_image[i]] for i in images]  # label rows that fit
    samples = {}
    for m, lines in captions.items():
        rows = np.zeros((len(lines), T), np.int32)  # a caption of T words or more keeps no end token
        for k, c in enumerate(lines):
            ids = [vocab[w] for w in c][:T]
            rows[k, :len(ids)] = ids
        samples[m] = rows
    strings = [[ref.array_to_str(r) for r in refs] for refs in references]
    return references, strings, samples, vocab


def test_cider_d_equals_pycocoevalcap_on_where_image2_captions(flickr, x64):
    references, strings, samples, _ = flickr
    rows = samples["merge_1"]
    scorer = CiderScorer()
    for row, refs in zip(rows, strings):
        scorer += (ref.array_to_str(row), refs)
    want = scorer.compute_score()[1]
    got = CiderD(references)(rows, np.arange(len(rows)))
    assert got.dtype == np.float64
    assert_close(got, want, True)
    assert 0.3 < want.mean() < 1.0  # real scores, not zeros


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["x64", "x32"])
def test_cider_d_equals_cached_ciderd_with_several_samples_per_image(flickr, precision, request):
    """Four samples per image in shuffled order: the document frequencies stay those of the 1,000
    distinct images (ciderD's cached mode), not of the 4,000 (sample, references) pairs."""
    request.getfixturevalue(precision)
    references, strings, samples, _ = flickr
    rows = np.concatenate([samples[m] for m in MODELS])
    image = np.tile(np.arange(len(references)), len(MODELS))
    order = np.random.default_rng(0).permutation(len(rows))
    rows, image = rows[order], image[order]
    df, images = ref.document_frequency(strings)
    want = ref.cider_d(rows, image, strings, df, images)
    got = CiderD(references)(rows, image)
    assert_close(got, want, precision == "x64")


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["x64", "x32"])
def test_bleu_4_equals_pycocoevalcap_per_sentence(flickr, precision, request):
    request.getfixturevalue(precision)
    references, strings, samples, _ = flickr
    rows = np.concatenate([samples["init_1"], samples["par_1"]])
    image = np.tile(np.arange(len(references)), 2)
    assert_close(Bleu(references)(rows, image), ref.bleu(rows, image, strings), precision == "x64")


def _edge_cases():
    """Images with 1..6 references of 1..9 ids (two at MAX_ID; every other one ending with the end
    id 0, as a label row that fits, the rest as rows cut with no end id), and samples: empty,
    longer than every reference with no end token, repeated n-grams, exact copies, ids no
    reference has."""
    rng = np.random.default_rng(3)
    references = [[list(rng.integers(1, 9, rng.integers(1, 10))) for _ in range(rng.integers(1, 7))] for _ in range(12)]
    references[0][0] = [MAX_ID, 2, MAX_ID, MAX_ID]
    references = [[[*r, 0] if (i + k) % 2 == 0 else r for k, r in enumerate(refs)] for i, refs in enumerate(references)]
    rows = np.zeros((24, 30), np.int64)
    image = np.arange(24) % 12
    for k in range(24):
        length = rng.integers(0, 12)
        rows[k, :length] = rng.integers(1, 9, length)
    rows[0] = 0                                          # empty
    rows[1] = rng.integers(1, 9, 30)                     # longer than every reference, no end token
    rows[2, :25] = 3                                     # one repeated word
    rows[3, :20] = [4, 5] * 10                           # repeated bigrams
    rows[4, :len(references[4][0])] = references[4][0]   # a copy of a reference
    rows[5, :5] = [40, 41, 42, 43, 44]                   # ids in no reference
    rows[12, :5] = [MAX_ID, 2, MAX_ID, MAX_ID, 7]        # the largest id
    return references, rows, image


@pytest.mark.parametrize(("end", "precision"), [("row", "x64"), pytest.param("never", "x64", marks=pytest.mark.slow),
                                                pytest.param("always", "x64", marks=pytest.mark.slow), ("row", "x32")])
def test_edge_cases_equal_the_python_rewards(end, precision, request):
    """Each rule for reading rows, applied alike to references and samples, equals the Python
    scorers on the strings that rule gives (``row``: ``array_to_str``)."""
    request.getfixturevalue(precision)
    references, rows, image = _edge_cases()
    strings = [[ref.read_str(r, end) for r in refs] for refs in references]
    df, images = ref.document_frequency(strings)
    cider = ref.CachedCiderD(df, images)
    bleu = ref.BleuScorer(n=4)
    for row, i in zip(rows, image):
        cider += (ref.read_str(row, end), strings[i])
        bleu += (ref.read_str(row, end), strings[i])
    got = CiderD(references, end=end)(rows, image)
    assert_close(got, cider.compute_score()[1], precision == "x64")
    assert_close(Bleu(references, end=end)(rows, image), bleu.compute_score(option="closest")[1][3],
                 precision == "x64")
    assert float(got[4]) > 0 and (end != "never" or float(got[0]) == 0.0)


def test_document_frequencies_from_another_corpus_and_from_counts(x64):
    """Frequencies of a larger corpus (a cached file's ``document_frequency`` and ``ref_len``)
    passed in: n-grams the scored references lack, and log(images) of that corpus."""
    references, rows, image = _edge_cases()
    corpus = references + [[[1, 2, 3, 0], [2, 3, 4, 5]], [[6, 7, 0]], [[8, 1, 2]]]
    strings = [[ref.array_to_str(r) for r in refs] for refs in corpus]
    df, images = ref.document_frequency(strings)
    from_counts = DocumentFrequency.from_counts({tuple(map(int, g)): v for g, v in df.items()}, images)
    from_refs = DocumentFrequency.from_references(corpus)
    np.testing.assert_array_equal(from_counts.keys, from_refs.keys)
    np.testing.assert_array_equal(from_counts.df, from_refs.df)
    got = CiderD(references, document_frequency=from_refs)(rows, image)
    assert_close(got, ref.cider_d(rows, image, strings, df, images), True)


def test_the_reward_runs_inside_jit_as_an_argument_with_no_host_callback():
    """Traced as arguments of an outer jit (the rewards' own calls are jitted the same way and run
    in every test above), lowered with no host callback and no custom call."""
    import jax
    references, rows, image = _edge_cases()
    cider, bleu = CiderD(references), Bleu(references)

    @jax.jit
    def mixed(cider, bleu, rows, image):  # self-critical.pytorch's cider / bleu reward weights
        return 0.5 * cider(rows, image) + 0.5 * bleu(rows, image)

    text = mixed.lower(cider, bleu, rows, image).as_text()
    assert "while" in text  # the binary searches: the reward was traced, not skipped
    assert "callback" not in text and "custom_call" not in text


def test_bad_references_are_refused():
    with pytest.raises(ValueError, match="0..65534"):
        CiderD([[[1, MAX_ID + 1]]])
    with pytest.raises(ValueError, match="0..9 .a vocabulary of 10"):
        Bleu([[[1, 10]]], vocab_size=10)
    with pytest.raises(ValueError, match="end 'sometimes'"):
        CiderD([[[1, 2]]], end="sometimes")
    with pytest.raises(ValueError, match="image 1 has no references"):
        Bleu([[[1, 2]], []])
    with pytest.raises(ValueError, match="vocabulary of 70000 ids"):
        CiderD([[[1, 2]]], vocab_size=70_000)
    with pytest.raises(ValueError, match="no images"):
        CiderD([])
    with pytest.raises(ValueError, match="pad_id"):  # id + 1 = 0 would read as "no token"
        CiderD([[[1, 2]]], pad_id=-1)
