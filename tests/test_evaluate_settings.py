"""``evaluate``'s settings.json says how each metric ran (its backend, whether a JVM started), and a
metric's capabilities are declared facts (``PostgenMetric.has_stats``), checked when it is
registered, not guessed from an exception raised while it runs."""
import contextlib

import numpy as np
import pytest

from pregen_jax import postgen
from pregen_jax.evaluation import score_files
from pregen_jax.postgen import PostgenMetric, PostgenOptions, jvm, ptb
from tests.test_evaluate import coco_files

CAPTIONS = {f"img{k}.jpg": [f"a {c} dog runs on the grass", f"the {c} dog is running", f"a dog {c} on grass",
                            f"one {c} animal outside", f"a {c} puppy plays"]
            for k, c in enumerate(["brown", "black", "white", "small", "big", "wet", "happy", "young"])}


class _Length(PostgenMetric):
    """Declares no per-image statistics: the mean candidate length, from its own compute_score."""

    name = "TestLength"
    has_stats = False
    score_range = (0.0, float("inf"))

    def compute_score(self, gts, res):
        lengths = [float(len(res[i][0].split())) for i in gts]
        return float(np.mean(lengths)), lengths


class _Broken(PostgenMetric):
    """Declares per-image statistics, and its implementation fails as an unfinished one would."""

    name = "TestBroken"

    def _checked_stats(self, gts, res):
        raise NotImplementedError("a bug inside the metric")


@contextlib.contextmanager
def registered(name: str, metric_class):
    postgen.register_metric(name, metric_class)
    try:
        yield
    finally:
        postgen.REGISTRY.remove(name)


def test_settings_name_each_backend_and_no_jvm_where_none_ran(tmp_path):
    refs, paths = coco_files(tmp_path, CAPTIONS)
    got = score_files(refs, paths, metrics=["Bleu_4", "CIDEr"], tokenizer="alnum-lower")
    assert got.settings["backends"] == {"Bleu_4": "native", "CIDEr": "native", "tokenizer": None}
    assert got.settings["jvms_started"] == 0 and got.settings["java"] == "not used"
    coco = score_files(refs, paths, metrics=["Bleu_4"], tokenizer="ptb", options=PostgenOptions(backend="coco"))
    assert coco.settings["backends"] == {"Bleu_4": "coco", "tokenizer": ptb.DEFAULT_BACKEND}
    assert coco.settings["jvms_started"] == (ptb.DEFAULT_BACKEND == "java")  # pycocoevalcap's BLEU is Python


def test_meteor_from_the_jar_is_recorded_as_a_jvm_that_ran(tmp_path, java_on_path):
    """backend="coco" runs METEOR's jar: settings.json used to say Java was "not used"."""
    refs, paths = coco_files(tmp_path, CAPTIONS)
    got = score_files(refs, paths, metrics=["METEOR"], tokenizer="alnum-lower", options=PostgenOptions(backend="coco"))
    assert got.settings["backends"] == {"METEOR": "coco", "tokenizer": None}
    assert got.settings["jvms_started"] == 1
    assert got.settings["java"] == jvm.java_description() != "not used"


def test_a_metric_declaring_no_statistics_gets_its_scores_without_intervals(tmp_path):
    refs, paths = coco_files(tmp_path, CAPTIONS, systems=(0, 1))
    with registered("TestLength", _Length):
        got = score_files(refs, paths, metrics=["Bleu_4", "TestLength"], tokenizer="alnum-lower")
    rows = got.table.set_index(["system", "metric"])
    for system, k in (("res0", 0), ("res1", 1)):
        expected = np.mean([len(c[k].lower().split()) for c in CAPTIONS.values()])
        assert rows.loc[(system, "TestLength"), "score"] == pytest.approx(expected)
        assert np.isnan(rows.loc[(system, "TestLength"), "low"]) and not np.isnan(rows.loc[(system, "Bleu_4"), "low"])
    assert any("TestLength" in note and "has_stats" in note for note in got.notes)
    assert got.settings["backends"]["TestLength"] is None  # one implementation


def test_an_error_inside_a_metric_is_raised_not_turned_into_a_note(tmp_path):
    refs, paths = coco_files(tmp_path, CAPTIONS)
    with registered("TestBroken", _Broken), pytest.raises(NotImplementedError, match="a bug inside the metric"):
        score_files(refs, paths, metrics=["TestBroken"], tokenizer="alnum-lower")


def test_register_metric_checks_what_a_class_declares():
    class NoStats(PostgenMetric):  # declares statistics (the default) and implements none
        pass

    class NoScore(PostgenMetric):  # declares none and has no compute_score of its own
        has_stats = False

    with pytest.raises(TypeError, match="implements no _checked_stats"):
        postgen.register_metric("TestNoStats", NoStats)
    with pytest.raises(TypeError, match="must implement compute_score"):
        postgen.register_metric("TestNoScore", NoScore)
    assert "TestNoStats" not in postgen.REGISTRY and "TestNoScore" not in postgen.REGISTRY
    assert all(spec.has_stats for spec in postgen.REGISTRY.values())  # every built-in metric gives statistics
