"""The shared fit loop on a model small enough to follow by hand: a scalar fitted to a target by
SGD, with scripted validation values, so early stopping, the best epoch, snapshots and resume
can be checked exactly (the caption generators and the matcher test it on real models)."""
import jax
import numpy as np
import optax
import pytest

from pregen_jax.training import Schedule, Task, checkpoints, fit, loop

META = {"model": "scalar", "lr": 0.1}


def scalar_task(validation=None, improves=None, batches_per_epoch=3):
    """params {"w": f32[]} moved towards 1.0 by SGD on (w - 1)^2; ``validation``: one value per epoch."""
    def step(params, opt_state, batch, epoch, index):
        grads = {"w": 2.0 * (params["w"] - 1.0)}
        updates, opt_state = optax.sgd(0.1).update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, (params["w"] - 1.0) ** 2

    validate = None
    if validation is not None:
        def validate(params):
            value = validation[len(seen)]
            seen.append(float(params["w"]))
            return {"val": value}, value
    seen = []
    task = Task(lambda epoch: list(range(batches_per_epoch)), step, lambda e, r, b: f"epoch {e}", validate,
                **({"improves": improves} if improves else {}))
    return task, seen


def run(workdir, task, epochs=6, **schedule):
    return fit(task, Schedule(epochs, "final.msgpack", **schedule), {"w": np.float32(0.0)}, optax.sgd(0.1),
               workdir, META, ("model", "lr"), progress=False)


def test_early_stopping_keeps_the_best_epoch_and_its_snapshot(tmp_path):
    task, seen = scalar_task([0.5, 0.7, 0.6, 0.65, 0.9, 1.0])   # higher is better: best epoch 2
    fitted = run(tmp_path, task, patience=2, snapshot_epochs=(2, 3, 5))
    assert [h["epoch"] for h in fitted.history] == [1, 2, 3, 4]   # epochs 3 and 4 do not beat 0.7
    assert [h["val"] for h in fitted.history] == [0.5, 0.7, 0.6, 0.65]
    assert all(h["eval_seconds"] >= 0 and h["seconds"] >= h["eval_seconds"] for h in fitted.history)
    assert float(fitted.params["w"]) == pytest.approx(seen[1])
    tree, meta = checkpoints.load(fitted.path)
    assert meta["epoch"] == 2 and meta["history"] == fitted.history and meta["model"] == "scalar"
    snapshot, snap_meta = checkpoints.load(tmp_path / "snapshot-epoch2.msgpack")
    assert snapshot["params"]["w"] == tree["params"]["w"] and snap_meta["val"] == 0.7
    assert (tmp_path / "snapshot-epoch3.msgpack").is_file() and not (tmp_path / "snapshot-epoch5.msgpack").exists()


def test_lower_is_better_and_ties_keep_the_earlier_epoch(tmp_path):
    task, _ = scalar_task([3.0, 2.0, 2.0, 1.0], improves=lambda value, best: value < best)
    fitted = run(tmp_path, task, epochs=4)
    assert checkpoints.load(fitted.path)[1]["epoch"] == 4
    task, _ = scalar_task([3.0, 2.0, 2.0, 2.0], improves=lambda value, best: value < best)
    assert checkpoints.load(run(tmp_path / "tie", task, epochs=4).path)[1]["epoch"] == 2


def test_without_validation_the_last_epoch_is_kept(tmp_path):
    task, _ = scalar_task()
    fitted = run(tmp_path, task, epochs=3, patience=1)
    assert len(fitted.history) == 3 and "eval_seconds" not in fitted.history[0]
    assert checkpoints.load(fitted.path)[1]["epoch"] == 3
    assert float(fitted.params["w"]) == pytest.approx(1.0 - 0.8 ** 9, rel=1e-5)   # 9 steps of SGD


def test_an_interrupted_run_resumes_to_the_same_result(tmp_path, crash_on):
    values = [0.1, 0.3, 0.2, 0.4]
    straight = run(tmp_path / "a", scalar_task(values)[0], epochs=4)
    with crash_on(checkpoints, "save", call=3), pytest.raises(KeyboardInterrupt):   # in epoch 3's checkpoint
        run(tmp_path / "b", scalar_task(values)[0], epochs=4)
    assert checkpoints.load(tmp_path / "b" / loop.CHECKPOINT)[1]["state"]["epoch"] == 2
    task, seen = scalar_task(values[2:])
    resumed = run(tmp_path / "b", task, epochs=4)
    assert len(seen) == 2   # only epochs 3 and 4 ran again
    jax.tree_util.tree_map(np.testing.assert_array_equal, straight.params, resumed.params)
    assert [h["val"] for h in resumed.history] == values
    # A checkpoint made with other settings is refused, naming the file.
    (tmp_path / "b" / "final.msgpack").unlink()
    with pytest.raises(ValueError, match="checkpoint.msgpack: checkpoint was made with a different lr"):
        fit(scalar_task(values)[0], Schedule(5, "final.msgpack"), {"w": np.float32(0.0)}, optax.sgd(0.1),
            tmp_path / "b", {**META, "lr": 0.2}, ("model", "lr"), progress=False)


def test_step_snapshots_count_steps_over_epochs_and_resume(tmp_path, crash_on):
    """``snapshot_every``: the parameters after every 2nd SGD step (w = 1 - 0.8^n after n steps), 3 steps an
    epoch; a run killed in epoch 2's checkpoint resumes counting from step 3, not from 0."""
    def snapshots(folder):
        found = {}
        for path in folder.glob("snapshot-step*.msgpack"):
            tree, meta = checkpoints.load(path)
            found[int(path.stem.removeprefix("snapshot-step"))] = (float(tree["params"]["w"]), meta["epoch"])
        return found
    expected = {n: (pytest.approx(1 - 0.8 ** n, rel=1e-5), (n - 1) // 3 + 1) for n in (2, 4, 6, 8)}
    run(tmp_path / "a", scalar_task()[0], epochs=3, snapshot_every=2)
    assert snapshots(tmp_path / "a") == expected
    with crash_on(checkpoints, "save", call=5), pytest.raises(KeyboardInterrupt):  # steps 2, epoch 1, steps 4, 6, epoch 2
        run(tmp_path / "b", scalar_task()[0], epochs=3, snapshot_every=2)
    assert checkpoints.load(tmp_path / "b" / loop.CHECKPOINT)[1]["state"]["step"] == 3
    run(tmp_path / "b", scalar_task()[0], epochs=3, snapshot_every=2)
    assert snapshots(tmp_path / "b") == expected
    run(tmp_path / "c", scalar_task()[0], epochs=3)
    assert not list((tmp_path / "c").glob("snapshot-step*"))  # off by default
