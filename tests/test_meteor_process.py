"""METEOR's native backend in a process of its own (postgen/meteor/process.py): the same rows and
scores as in this process, errors said in one line, and no child outliving its use."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from pregen_jax import postgen, processes
from pregen_jax.postgen.meteor import METEOR, scoring
from pregen_jax.postgen.meteor.process import MeteorProcess

GTS = {1: ["a man rides a horse on the beach", "a person on a horse"], 2: ["two dogs play in the snow"],
       3: ["a child in a red shirt jumps", "a kid jumping", "the boy leaps over a puddle"]}
RES = {1: ["a man riding a horse"], 2: ["dogs are playing in snow"], 3: ["a young boy jumps over water"]}


@pytest.fixture(scope="module")
def apart():
    with postgen.make_metrics(["METEOR"], apart=True) as started:
        yield started.metrics[0]


def test_apart_gives_the_rows_and_scores_of_this_process(apart):
    here = METEOR()
    rows = apart.stats(GTS, RES)
    assert np.array_equal(rows, here.stats(GTS, RES))  # statistics are counts: exactly equal
    assert np.array_equal(apart.per_image(rows), here.per_image(rows))  # the same compiled formula, in the child
    assert apart.compute_score(GTS, RES) == here.compute_score(GTS, RES)
    sums = rows.sum(0)[None].repeat(3, 0)
    assert np.array_equal(apart.from_sums(sums, 3), scoring.meteor_of_sums(sums))
    assert apart.aligned >= 6


def test_a_started_request_is_received_once_and_replies_keep_their_order(apart):
    finish = apart.stats_started(GTS, RES)
    scores = apart.from_sums(np.ones((2, scoring.K)), 2)  # asked before the rows are taken: they are kept
    assert scores.shape == (2,)
    assert np.array_equal(finish(), finish())
    assert np.array_equal(finish(), METEOR().stats(GTS, RES))


def test_an_error_in_the_child_is_one_line_here():
    meteor = MeteorProcess()
    try:
        with pytest.raises(RuntimeError, match=r"^METEOR's process: TypeError: [^\n]+$"):
            meteor.stats({1: None}, {1: ["a dog"]})  # no list of references: the child's error, here
        assert meteor.stats({1: ["a dog runs"]}, {1: ["a dog"]}).shape == (1, scoring.K)  # it goes on
    finally:
        meteor.close()
    assert meteor._child.wait(10) == 0  # ended by itself at the end of its input


def test_the_child_ends_with_its_metric_set():
    with postgen.make_metrics(["METEOR"], apart=True) as started:
        child = started.metrics[0]._python._child
        assert child.poll() is None
    assert child.wait(10) == 0


def test_a_child_started_early_is_adopted_or_ended():
    with processes.started_early("pregen_jax.postgen.meteor.process"):
        early = processes._EARLY["pregen_jax.postgen.meteor.process"]
        meteor = MeteorProcess()
        try:
            assert meteor._child is early and not processes._EARLY
        finally:
            meteor.close()
    with processes.started_early("pregen_jax.postgen.meteor.process"):
        unadopted = processes._EARLY["pregen_jax.postgen.meteor.process"]
    assert unadopted.poll() is not None and not processes._EARLY
    code = ("from pregen_jax import processes\nearly = processes.started_early('pregen_jax.postgen.meteor.process')\n"
            "early.__enter__()\nprint(processes._EARLY['pregen_jax.postgen.meteor.process'].pid)\n")  # never ended: exit ends it
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    if os.path.isdir("/proc"):  # killed and reaped by its parent at its exit
        assert not os.path.exists(f"/proc/{int(done.stdout)}")


def test_evaluate_refused_for_bad_input_leaves_no_meteor_process(tmp_path, capsys):
    from pregen_jax import cli
    refs = tmp_path / "refs.json"
    refs.write_text('{"images": [], "annotations": [')
    assert cli.main(["evaluate", "--references", str(refs), "--captions", str(refs)]) == 2
    assert "refs.json" in capsys.readouterr().err and not processes._EARLY


def test_a_child_ended_by_ctrl_c_ends_its_request_as_an_interrupt():
    """The terminal's Ctrl-C reaches the child too: it ends quietly (130; one that arrives while it
    starts waits for its quiet handler), and the parent's wait for its answer ends as the
    interrupt it is, not as a failed metric."""
    import signal
    meteor = MeteorProcess()
    try:
        os.kill(meteor._child.pid, signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            meteor.stats(GTS, RES)
        assert meteor._child.poll() == 130
    finally:
        meteor.close()
