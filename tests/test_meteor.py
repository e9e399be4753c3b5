"""METEOR's per-image statistics protocol on the jar backend: ``stats`` are the jar's SCORE
replies, and ``aggregate`` (computed in Python) is the jar's EVAL, per image and corpus."""
import numpy as np
import pytest

from pregen_jax.postgen.meteor import METEOR, scoring
from tests.meteor_oracle import JarStats, Probe, java_available, sets

pytestmark = pytest.mark.skipif(not java_available(), reason="java and javac not installed (the METEOR oracle)")


@pytest.fixture(scope="session")
def jar():
    oracle = JarStats()
    yield oracle
    oracle.close()


def _sample() -> list:
    """Where-image2 (two models), MUTT and hard strings: perfect matches, empty lines, long references."""
    return (sets.where_image2("init_1")[:60] + sets.where_image2("human_1")[:30] + sets.mutt("passive", 20)[:20]
            + sets.hard_strings())


def test_aggregate_equals_the_jars_eval_per_image_corpus_and_resample(jar):
    stats = jar.stats([(refs, cand) for refs, cand, _ in _sample()])
    assert stats.shape[1] == scoring.K and scoring.perfect(stats).any()
    corpus, per_image = jar.eval(stats)
    assert abs(scoring.aggregate(stats) - corpus) <= 1e-12
    np.testing.assert_allclose(scoring.aggregate(stats[:, None, :]), per_image, rtol=0, atol=1e-12)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, len(stats), (3, len(stats)))  # bootstrap resamples: leading axes vectorize
    expected = [jar.eval(stats[row])[0] for row in idx]
    np.testing.assert_allclose(scoring.aggregate(stats[idx]), expected, rtol=0, atol=1e-12)


def test_a_perfect_match_adds_no_chunk_to_the_corpus(jar):
    segments = [(["a red ball above a blue box"], "a red ball above a blue box"), (["a blue box"], "box blue a")]
    stats = jar.stats(segments)
    assert scoring.perfect(stats).tolist() == [True, False]
    assert scoring.summed(stats)[scoring.CHUNKS] == stats[1, scoring.CHUNKS]
    assert abs(scoring.aggregate(stats) - jar.eval(stats)[0]) <= 1e-12


def test_metric_stats_are_the_jars_score_lines_in_gts_order(jar):
    segments = _sample()[:40]
    gts = {f"i{k}": refs for k, (refs, _, _) in enumerate(segments)}
    res = {f"i{k}": [cand] for k, (_, cand, _) in enumerate(segments)}
    metric = METEOR(backend="coco")
    try:
        stats = metric.stats(gts, res)
        expected = jar.stats([(refs, cand) for refs, cand, _ in segments])
        np.testing.assert_array_equal(stats, scoring.eval_rows(expected))
        corpus, per_image = metric.compute_score(gts, res)
        assert abs(metric.aggregate(stats) - corpus) <= 1e-12
        np.testing.assert_allclose(metric.aggregate(stats[:, None, :]), per_image, rtol=0, atol=1e-12)
    finally:
        metric.close()


def test_the_probe_shows_each_stage_of_the_jar():
    probe = Probe()
    try:
        assert probe.normalize(["It's the U.S.-based co., 3,000 dogs."]) == ["It 's the US based co . , 3,000 dogs ."]
        assert probe.stem(["riding", "dogs"]) == ["ride", "dog"]
        aligned, plural = probe.align([("a man rides a horse", "the man is riding a horse ."), ("dogs", "the dog")])
        assert aligned.matches == ((0, 2, 0, 2, 3), (3, 1, 2, 1, 1), (4, 1, 3, 1, 0), (5, 1, 4, 1, 0))
        assert plural.matches == ((0, 2, 0, 1, 3),)  # "the dog" = "dogs": a paraphrase (stage 3)
    finally:
        probe.close()
