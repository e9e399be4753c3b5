"""Training ahead in threads: units come back in order, a failure or an early stop ends every other
training at its next step and leaves no thread behind, and a search trains the same models with
one trainer as with two."""
import os
import threading
import time

import pandas as pd
import pytest

from pregen_jax import cli
from pregen_jax.pipeline import trainers
from pregen_jax.training import checkpoints, loop
from tests.builders import training_config, write_config, write_training_corpus


def trainer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("pregen-trainer")]


def fake_training(stop: threading.Event, seconds: dict, running: list, fail: str | None = None):
    """A ``start`` that 'trains' a unit for ``seconds[unit]`` in small steps, ending when ``stop`` is set."""
    def start(unit):
        running.append(unit)
        try:
            end = time.perf_counter() + seconds[unit]
            while time.perf_counter() < end:
                if stop.is_set():
                    raise loop.Stopped(unit)
                if unit == fail:
                    raise ValueError(f"{unit} failed")
                time.sleep(0.005)
            return f"trained {unit}"
        finally:
            running.remove(unit)
    return start


def test_units_come_back_in_order_with_two_at_once():
    stop, running, most = threading.Event(), [], []
    seconds = {"a": 0.3, "b": 0.05, "c": 0.05, "d": 0.1}
    start = fake_training(stop, seconds, running)

    def watched(unit):
        most.append(len(running) + 1)
        return start(unit)
    with trainers.started_in_order(list(seconds), watched, 2, stop) as started:
        assert list(started) == [(0, "trained a"), (1, "trained b"), (2, "trained c"), (3, "trained d")]
    assert max(most) == 2 and not trainer_threads()


def test_a_failure_stops_the_others_and_no_thread_outlives_it():
    stop, running = threading.Event(), []
    start = fake_training(stop, {"a": 0.05, "b": 5.0, "c": 0.5}, running, fail="c")
    began = time.perf_counter()
    with pytest.raises(ValueError, match="c failed"):
        with trainers.started_in_order(["a", "c", "b"], start, 2, stop) as started:
            for _ in started:
                pass
    assert stop.is_set() and not running and not trainer_threads()
    assert time.perf_counter() - began < 2  # b's 5 s of training ended at its next step


def test_leaving_early_stops_the_trainings_still_running():
    stop, running = threading.Event(), []
    start = fake_training(stop, {"a": 0.01, "b": 5.0, "c": 5.0}, running)
    with trainers.started_in_order(["a", "b", "c"], start, 2, stop) as started:
        assert next(started) == (0, "trained a")
    assert stop.is_set() and not running and not trainer_threads()


def test_one_trainer_runs_in_the_calling_thread():
    stop, names = threading.Event(), []
    with trainers.started_in_order([1, 2], lambda unit: names.append(threading.current_thread().name) or unit,
                                   1, stop) as started:
        assert list(started) == [(0, 1), (1, 2)]
    assert names == [threading.current_thread().name] * 2


def run(config_path, out, *options):
    return cli.main(["run", "--config", str(config_path), "--out", str(out), "--no-progress", *options])


def test_two_trainers_train_the_same_models_and_ctrl_c_ends_them(tmp_path, crash_on):
    write_training_corpus(tmp_path)
    config = training_config(models={"architectures": ["par", "merge"], "runs": 2},
                             training={"epochs": 2, "snapshot_epochs": [1]}, postgen={"metrics": ["CIDEr"]})
    path = write_config(tmp_path / "train.toml", config)
    assert run(path, tmp_path / "one", "--trainers", "1", "--workers", "0") == 0
    with crash_on(checkpoints, "save", call=3):  # Ctrl-C in a trainer thread, mid-search
        assert run(path, tmp_path / "two", "--trainers", "2") == 130
    assert not trainer_threads()
    assert run(path, tmp_path / "two", "--trainers", "2") == 0  # resumed from the checkpoints left
    one, two = (pd.read_csv(tmp_path / name / "table.tsv", sep="\t") for name in ("one", "two"))
    assert len(one) == 8 * 15
    pd.testing.assert_frame_equal(one, two)


@pytest.mark.parametrize("hold, train", [(False, True), (True, True), (True, False)])
def test_postgen_waits_for_the_trainers_where_they_fill_the_cores(monkeypatch, hold, train):
    """Held: no model goes to the post-gen pool until a trainer has no unit left (with one trainer:
    the last unit has trained), then all go, in order; not held, or held where no unit trains
    (ready-made models, trainings in the cache): each goes as soon as it is decoded. Either way
    every model is taken up in order."""
    import concurrent.futures
    import dataclasses

    from pregen_jax.pipeline import search as search_module
    from pregen_jax.pipeline.workers import Scored

    events = []

    @dataclasses.dataclass
    class Model:
        name: str
        finished: bool = False

    @dataclasses.dataclass
    class Context:
        stop: threading.Event | None = None

    class Pool:
        def warm(self):
            pass

        def submit(self, model):
            events.append(("submit", model.name))
            future = concurrent.futures.Future()
            future.set_result(Scored(model, {}, {}))
            return future

    class Search:
        settings = dataclasses.make_dataclass("Settings", [("progress", bool)])(False)

        def context(self, cache, timer):
            return Context()

        def rows(self, model):
            return model.name

    def start(unit, ctx):
        events.append(("trained", unit))
        return [Model(f"{unit}-snapshot"), Model(f"{unit}-final")]

    def finish(model, scored):
        model.finished = True
    monkeypatch.setattr(search_module.flow, "start_unit", start)
    monkeypatch.setattr(search_module, "_will_train", lambda unit: train)
    monkeypatch.setattr(search_module.flow, "advance", lambda model, ctx: None)
    monkeypatch.setattr(search_module.flow, "merge", finish)
    cache = type("Cache", (), {"merge": lambda self, counts: None})()
    units = ["a", "b", "c"]
    evaluated = search_module._evaluate_mine(Search(), units, [0, 1, 2], cache, Pool(), search_module.StageTimer(),
                                             trainers=1, hold_postgen=hold)
    assert evaluated == {k: [f"{u}-snapshot", f"{u}-final"] for k, u in enumerate(units)}
    submits = [name for kind, name in events if kind == "submit"]
    assert submits == [f"{u}-{m}" for u in units for m in ("snapshot", "final")]
    first_submit = next(k for k, (kind, _) in enumerate(events) if kind == "submit")
    if hold and train:
        assert [kind for kind, _ in events[:first_submit]] == ["trained"] * 3
    else:
        assert events[:first_submit] == [("trained", "a")]


def test_trainers_fill_the_cores_only_when_there_are_as_many_as_cores(monkeypatch):
    import jax
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(jax, "default_backend", lambda: "cpu")
    assert trainers.cores_here() == 2 and trainers.cores_here(processes_here=2) == 1
    assert trainers.trainers_fill_cores(2) and trainers.trainers_fill_cores(4)
    assert not trainers.trainers_fill_cores(1)  # one trainer leaves a core to post-gen
    assert not trainers.trainers_fill_cores(1, processes_here=2)  # one trainer, one core: the plain sequential search
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert not trainers.trainers_fill_cores(2)  # the steps share the device: the cores are free
