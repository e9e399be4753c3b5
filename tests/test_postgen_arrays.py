"""The array backends of CIDEr-D, BLEU-1..4 and ROUGE-L equal pycocoevalcap to 1e-9, corpus and
per image, with each of its quirks tested; the functional API; CIDEr-D with whole-set frequencies."""
import math
import random
import re

import numpy as np
import pytest
from pycocoevalcap.bleu.bleu import Bleu
from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.rouge.rouge import Rouge

from pregen_jax import postgen
from pregen_jax.datasets import tokenize
from tests.conftest import shared

TOL = 1e-9


def coco(gts, res) -> dict:
    """{metric: (corpus, per_image)} from pycocoevalcap itself."""
    bleu, bleu_per = Bleu(4).compute_score(gts, res, verbose=0)
    out = {f"Bleu_{n}": (bleu[n - 1], bleu_per[n - 1]) for n in (1, 2, 3, 4)}
    out["ROUGE_L"] = Rouge().compute_score(gts, res)
    out["CIDEr"] = Cider().compute_score(gts, res)
    return out


def assert_equal_to_coco(gts, res):
    expected = coco(gts, res)
    ours = postgen.score_systems(list(expected), gts, {"m": res}, tokenize=False)["m"]
    for name, (corpus, per_image) in expected.items():
        assert ours[name][0] == pytest.approx(corpus, abs=TOL, rel=TOL), name
        np.testing.assert_allclose(ours[name][1], np.asarray(per_image, float), atol=TOL, rtol=TOL, err_msg=name)
        metric = postgen.make_metrics([name]).metrics[0]  # the coco-style classes agree too
        score, per = metric.compute_score(gts, res)
        assert score == pytest.approx(corpus, abs=TOL, rel=TOL)
        np.testing.assert_allclose(per, np.asarray(per_image, float), atol=TOL, rtol=TOL)


def _random_corpus(seed=0, images=120):
    rng = random.Random(seed)
    words = "a b c d e f g".split()
    sentence = lambda lo, hi: " ".join(rng.choice(words) for _ in range(rng.randint(lo, hi)))  # noqa: E731
    gts = {f"i{k}": [sentence(1, 12) for _ in range(rng.randint(1, 5))] for k in range(images)}
    res = {i: [sentence(0, 14)] for i in gts}
    return gts, res


def test_random_corpus_with_edge_cases_equals_pycocoevalcap():
    gts, res = _random_corpus()
    res["i0"] = [""]                                   # empty candidate
    gts["i1"] = [*gts["i1"], ""]                       # an empty reference
    res["i2"] = [" ".join(["a", "b", "c"] * 30)]        # longer than one 64-bit word (ROUGE-L's fallback)
    res["i3"] = [gts["i3"][0]]                          # an exact match
    assert_equal_to_coco(gts, res)


def test_kept_references_serve_later_candidates_exactly():
    from pregen_jax.postgen import references
    gts, res = _random_corpus(4, 60)
    gts = {i: [r for r in refs if r] or ["a"] for i, refs in gts.items()}      # canonical, none empty
    first = {i: [c[0] or "b"] for i, c in res.items()}
    second = {i: [f"{c[0]} newword{k % 7}".strip()] for k, (i, c) in enumerate(res.items())}  # words no reference has
    for candidates in (first, second, first):
        assert_equal_to_coco(gts, candidates)
    assert references.references_of([r for refs in gts.values() for r in refs]) is not None  # kept, reused
    # the same reference strings grouped into other images: the kept n-grams, a fresh join
    ids = list(gts)
    regrouped = {"x": gts[ids[0]] + gts[ids[1]], **{i: gts[i] for i in ids[2:]}}
    assert_equal_to_coco(regrouped, {"x": first[ids[0]], **{i: first[i] for i in ids[2:]}})


def _where_image2(model: str):
    folder = shared("where-image2-captions")
    ids = (folder / "imgs_flickr8k.txt").read_text().split()
    refs: dict = {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        refs.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    lines = (folder / f"flickr8k_{model}.txt").read_text(encoding="utf-8").splitlines()
    return {i: refs[i] for i in ids}, {i: [" ".join(tokenize(c))] for i, c in zip(ids, lines)}


def test_where_image2_captions_equal_pycocoevalcap():
    gts, res = _where_image2("init_1")
    assert_equal_to_coco(gts, res)


@pytest.mark.parametrize("source", ["random", "where-image2"])
def test_blocks_scored_alone_in_one_pass_equal_pycocoevalcap_on_each_block(source):
    """The 2018 strata: each block's CIDEr-D and BLEU as pycocoevalcap gives on the block alone
    (its own document frequencies, its summed counts). The array backends score all blocks in a
    pass per layer of disjoint blocks; overlapping, repeated and whole-set blocks included."""
    if source == "random":
        gts, res = _random_corpus(5, 90)
        res["i0"] = [""]
    else:
        try:
            gts, res = _where_image2("par_2")
        except FileNotFoundError:
            pytest.skip("../shared/data/where-image2-captions absent")
        gts, res = {i: gts[i] for i in list(gts)[:400]}, {i: res[i] for i in list(gts)[:400]}
    order = list(np.random.default_rng(1).permutation(list(gts)))
    blocks = [list(b) for k in (1, 2, 3, 5) for b in np.array_split(order, k)]
    blocks += [order[:7], order[3:40], order[::2], order[:7], [order[5]]]
    for name in ("CIDEr", "Bleu_4", "Bleu_2"):
        metric = postgen.make_metrics([name]).metrics[0]
        by_block, per_image = metric.score_blocks(gts, res, blocks)
        np.testing.assert_allclose(per_image, metric.compute_score(gts, res)[1], atol=TOL, rtol=TOL)
        for block, value in zip(blocks, by_block):
            expected = coco({i: gts[i] for i in block}, {i: res[i] for i in block})[name][0]
            assert value == pytest.approx(expected, abs=TOL, rel=TOL), (name, len(block))


def test_built_in_dataset_equals_pycocoevalcap():
    from pregen_jax.datasets.shapes import ShapesConfig, generate
    test = generate(ShapesConfig(train=1, val=1, test=150, refs_per_image=6))["test"]
    refs = [[" ".join(c) for c in captions] for captions in test.captions]
    gts = {k: r[1:] for k, r in enumerate(refs)}
    res = {k: [refs[k if k % 3 else (k + 1) % len(refs)][0]] for k in gts}  # some right, some another image's
    assert_equal_to_coco(gts, res)


# ------------------------------------------------------------------ pycocoevalcap's quirks, one by one


def test_bleu_tiny_and_small_constants():
    gts, res = {"x": ["a b c d e"]}, {"x": ["q r s t u"]}  # no n-gram matches: (0 + 1e-15) / (5 + 1e-9) ...
    _, per_image = postgen.score("Bleu_1", gts, res)
    assert per_image[0] == pytest.approx((0 + 1e-15) / (5 + 1e-9), rel=1e-12) and per_image[0] > 0
    _, per_image = postgen.score("Bleu_4", {"x": ["a b"]}, {"x": [""]})  # empty candidate: 0, not NaN
    assert per_image == [0.0]


def test_bleu_closest_reference_length_ties_to_the_shorter():
    gts, res = {"x": ["a b c d", "a b c d e f"]}, {"x": ["a b c d e"]}  # 4 and 6 both 1 away from 5
    _, per_image = postgen.score("Bleu_1", gts, res)
    assert per_image[0] == pytest.approx((5 + 1e-15) / (5 + 1e-9), rel=1e-12)  # reflen 4: no brevity penalty
    _, per_image = postgen.score("Bleu_1", {"x": ["a b c d e f", "a b c d e f g h"]}, {"x": ["a b c d e"]})
    assert per_image[0] == pytest.approx(math.exp(1 - 6 / 5), rel=1e-9)  # reflen 6 > 5: penalised


def test_corpus_bleu_comes_from_summed_counts_not_a_mean():
    gts, res = _random_corpus(1, 30)
    corpus, per_image = postgen.score("Bleu_2", gts, res)
    assert corpus != pytest.approx(np.mean(per_image), rel=1e-3)
    assert corpus == pytest.approx(Bleu(2).compute_score(gts, res, verbose=0)[0][1], abs=TOL)


def test_rouge_splits_on_a_single_space():
    gts, res = {"x": ["a b c"]}, {"x": ["a  b c"]}  # split(" "): ["a", "", "b", "c"], 4 tokens
    _, per_image = postgen.score("ROUGE_L", gts, res, tokenize=False)
    p, r = 3 / 4, 3 / 3
    assert per_image[0] == pytest.approx((1 + 1.2 ** 2) * p * r / (r + 1.2 ** 2 * p), abs=1e-12)
    assert per_image[0] == pytest.approx(Rouge().compute_score(gts, res)[1][0], abs=TOL)


def test_rouge_best_precision_and_best_recall_over_references_separately_beta_1_2():
    # reference 1 gives the best precision (2/2), reference 2 the best recall (2/3): F mixes them
    gts, res = {"x": ["a b c d e f", "a b x"]}, {"x": ["a b"]}
    _, per_image = postgen.score("ROUGE_L", gts, res)
    p, r = 1.0, 2 / 3
    assert per_image[0] == pytest.approx((1 + 1.44) * p * r / (r + 1.44 * p), abs=1e-12)


def test_cider_by_hand_idf_log_images_x10_mean_over_orders():
    gts = {"A": ["x y"], "B": ["z w"]}
    res = {"A": ["x y"], "B": ["z q"]}
    _, per_image = postgen.score("CIDEr", gts, res)
    assert per_image[0] == pytest.approx(10 * (1 + 1 + 0 + 0) / 4)  # cosine 1 for unigrams and bigrams
    # unigrams: "q" is in no reference: df 0 -> log(max(1, 0)) = 0, full weight log(2); cosine 1/2
    assert per_image[1] == pytest.approx(10 * 0.5 / 4)


def test_cider_document_frequency_counts_each_image_once_and_clips():
    # "x" occurs in both references of image A: its df is 1 (images), not 2 (references)
    gts = {"A": ["x y", "x z"], "B": ["u v"], "C": ["x w"]}
    res = {"A": ["x x"], "B": ["u v"], "C": ["w"]}  # "x x": tf 2 clipped by the reference's weight
    assert_equal_to_coco(gts, res)
    log3 = math.log(3)
    w_x = log3 - math.log(2)  # df("x") = 2 images
    # image A, unigrams, against "x y": min(2 w_x, w_x) * w_x / (|2 w_x| * |(w_x, log3)|); same for "x z"
    unigram = w_x * w_x / (2 * w_x * math.hypot(w_x, log3))
    _, per_image = postgen.score("CIDEr", gts, res)
    assert per_image[0] == pytest.approx(10 * (2 * unigram / 2) / 4, rel=1e-12)  # bigram "x x" matches nothing


def test_cider_length_penalty_sigma_6_on_bigram_counts():
    gts, res = {"A": ["a b c d e f g h i j"], "B": ["k"]}, {"A": ["a b c d e f g h"], "B": ["k"]}
    _, per_image = postgen.score("CIDEr", gts, res)
    # the candidate's n-grams all occur in the reference; delta = 9 - 7 bigrams
    expected = Cider().compute_score(gts, res)[1][0]
    assert per_image[0] == pytest.approx(expected, abs=TOL)
    gts_long = {"A": ["a b c d e f g h i j k l m n o p"], "B": ["k"]}
    ratio = postgen.score("CIDEr", gts_long, res)[1][0] / per_image[0]
    assert ratio < math.exp(-(15 - 7) ** 2 / 72) / math.exp(-(9 - 7) ** 2 / 72) * 1.01


# ------------------------------------------------------------------ the functional API and idf_from


def test_score_tokenizes_like_the_package_and_matches_coco_backend():
    gts = {1: ["A Dog runs.", "the dog, running!"], 2: ["Two cats   sleep"]}
    res = {1: ["A dog running"], 2: ["cats sleep."]}
    clean_gts = {k: [" ".join(tokenize(r)) for r in v] for k, v in gts.items()}
    clean_res = {k: [" ".join(tokenize(v[0]))] for k, v in res.items()}
    for name in postgen.ARRAY_METRICS:
        ours = postgen.score(name, gts, res, tokenizer="alnum-lower")
        theirs = postgen.score(name, clean_gts, clean_res, backend="coco", tokenize=False)
        assert ours[0] == pytest.approx(theirs[0], abs=TOL)
        np.testing.assert_allclose(ours[1], theirs[1], atol=TOL)
    assert postgen.tokenized(["a dog", "two cats"]) == ["a dog", "two cats"]  # idempotent
    with pytest.raises(ValueError, match="exactly one candidate"):
        postgen.score("CIDEr", clean_gts, {**clean_res, 2: ["a", "b"]})


def test_score_tokenizes_as_evaluate_by_default_and_the_old_way_by_name():
    """The default tokenizer is COCO's PTB (evaluate's): scores equal pycocoevalcap's on PTB tokens;
    ``alnum-lower`` by name gives the old default, which differs on "t-shirt" and "dog's"."""
    from pregen_jax.postgen import ptb
    gts = {1: ["A dog's T-shirt, red.", "the dog wears a t-shirt"], 2: ["Two cats   sleep!"]}
    res = {1: ["a dog in a t-shirt"], 2: ["cats sleep."]}
    ptb_gts = {k: ptb.tokenize_captions(v) for k, v in gts.items()}
    ptb_res = {k: ptb.tokenize_captions(v) for k, v in res.items()}
    assert ptb_gts[1][0] == "a dog 's t-shirt red"  # what alnum-lower would cut into "a dog s t shirt red"
    for name in postgen.ARRAY_METRICS:
        ours = postgen.score(name, gts, res)
        theirs = postgen.score(name, ptb_gts, ptb_res, backend="coco", tokenize=False)
        assert ours[0] == pytest.approx(theirs[0], abs=TOL)
        np.testing.assert_allclose(ours[1], theirs[1], atol=TOL)
        assert postgen.score(name, gts, res, tokenizer="ptb") == ours
    assert postgen.score("CIDEr", gts, res, tokenizer="alnum-lower")[0] != postgen.score("CIDEr", gts, res)[0]
    assert postgen.score("CIDEr", gts, res, tokenizer="none") == postgen.score("CIDEr", gts, res, tokenize=False)
    systems = postgen.score_systems(["CIDEr"], gts, {"m": res})["m"]["CIDEr"]
    assert systems[0] == pytest.approx(postgen.score("CIDEr", gts, res)[0], abs=TOL)
    with pytest.raises(ValueError, match="tokenizer 'nltk': choose from ptb, alnum-lower, none"):
        postgen.score("CIDEr", gts, res, tokenizer="nltk")


def test_inputs_are_checked_even_right_after_a_kept_corpus_of_nearly_the_same():
    """score() skips the input check when it finds the corpus of exactly these inputs kept: a
    change the check would refuse must not find it."""
    gts, res = {1: ["a dog runs"], 2: ["two cats sleep"]}, {1: ["a dog"], 2: ["cats"]}
    for name in postgen.ARRAY_METRICS:
        postgen.score(name, gts, res)
        with pytest.raises(ValueError, match="exactly one candidate"):
            postgen.score(name, gts, {1: ["a dog"], 2: ["cats", "more"]})
        with pytest.raises(ValueError, match="different images"):
            postgen.score(name, gts, {**res, 3: ["extra"]})
        with pytest.raises(ValueError, match="different images"):
            postgen.score(name, gts, {1: ["a dog"]})
        with pytest.raises(ValueError, match="only empty references"):
            postgen.score(name, {1: ["a dog runs"], 2: ["  "]}, res)
        # references that tokenize to nothing are scored (as before), but their tokenized form
        # given as input is still refused
        postgen.score(name, {1: ["a dog runs"], 2: ["!!!"]}, res)
        with pytest.raises(ValueError, match="only empty references"):
            postgen.score(name, {1: ["a dog runs"], 2: [""]}, res)


def test_a_corpus_kept_untokenized_is_not_served_to_a_call_that_tokenizes():
    gts, res = {1: ["A Dog runs."], 2: ["Two cats sleep"]}, {1: ["a dog runs"], 2: ["two cats"]}
    raw = postgen.score("CIDEr", gts, res, tokenize=False)
    assert postgen.score("CIDEr", gts, res) != raw
    assert postgen.score("CIDEr", gts, res) == postgen.score("CIDEr", {1: ["a dog runs"], 2: ["two cats sleep"]}, res)


def test_cider_idf_from_the_whole_set_gives_each_image_its_whole_set_score():
    gts, res = _random_corpus(2, 80)
    whole, per_image = postgen.score("CIDEr", gts, res)
    by_id = dict(zip(gts, per_image))
    rng = random.Random(0)
    means = []
    for _ in range(20):
        subset = rng.sample(list(gts), 10)
        sub_gts, sub_res = {i: gts[i] for i in subset}, {i: res[i] for i in subset}
        mean, sub_per_image = postgen.score("CIDEr", sub_gts, sub_res, idf_from=gts)
        np.testing.assert_allclose(sub_per_image, [by_id[i] for i in subset], rtol=1e-12)
        assert postgen.score("CIDEr", sub_gts, sub_res)[1] != pytest.approx(sub_per_image)  # the block's own df
        means.append(mean)
    # unbiased: over every partition into blocks, the block means average to the whole-set score
    blocks = [list(gts)[k:k + 10] for k in range(0, 80, 10)]
    block_means = [postgen.score("CIDEr", {i: gts[i] for i in b}, {i: res[i] for i in b}, idf_from=gts)[0]
                   for b in blocks]
    assert np.mean(block_means) == pytest.approx(whole, rel=1e-12)
    with pytest.raises(ValueError, match="not among the images of idf_from"):
        postgen.score("CIDEr", {"new": ["a"]}, {"new": ["a"]}, idf_from=gts)
    with pytest.raises(ValueError, match="CIDEr only"):
        postgen.score("ROUGE_L", gts, res, idf_from=gts)


def test_unknown_backend_and_metric():
    with pytest.raises(ValueError, match="backend"):
        postgen.score("CIDEr", {1: ["a"]}, {1: ["a"]}, backend="jax")
    with pytest.raises(ValueError, match="unknown post-gen metric"):
        postgen.score("BLEURT", {1: ["a"]}, {1: ["a"]})
    assert re.search("array", postgen.REGISTRY["CIDEr"].cache_settings(postgen.PostgenOptions())["backend"])
