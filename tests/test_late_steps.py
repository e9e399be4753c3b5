"""Late steps never lose results (issue 27): a step after the table that does not apply is named in
report.md and excluded.tsv with one warning line and exit 0; an unexpected error in one leaves the
table, the manifest and everything else written, and ends the run with one line naming the step."""
import contextlib
import io
import json

import pandas as pd
import pytest

import pregen_jax.ranking
from pregen_jax import cli
from pregen_jax.pipeline import report
from pregen_jax.pipeline.late import LateSteps
from pregen_jax.ranking import NotApplicable

# The one-model search: its captions are degenerate, so CIDEr is constant over the strata.
TINY = """seed = 0
[data]
source = "shapes"
train = 64
val = 16
test = 16
encoder_epochs = 1
[models]
architectures = ["merge"]
runs = 1
[models.rnn]
embed_size = 16
hidden_size = 8
image_size = 8
[training]
epochs = 2
batch_size = 32
snapshot_epochs = []
[postgen]
metrics = ["CIDEr"]
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(config path, run folder, exit code, stderr) of the tiny search, run once."""
    folder = tmp_path_factory.mktemp("late")
    config = folder / "tiny.toml"
    config.write_text(TINY)
    out = folder / "out"
    err = io.StringIO()  # (capsys is function-scoped: the module's one run captures by hand)
    with contextlib.redirect_stderr(err):
        code = cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"])
    return config, out, code, err.getvalue()


def test_a_constant_postgen_metric_is_reported_and_everything_is_written(tiny):
    _, out, code, err = tiny
    assert code == 0, err
    for name in ("table.tsv", "manifest.json", "report.md", "excluded.tsv", "models.tsv", "config.toml"):
        assert (out / name).is_file(), name
    assert "warning: post-gen column 'CIDEr' is constant in group all" in err
    assert "warning: model-level decisions not done: only 1 model(s)" in err
    report_md = (out / "report.md").read_text()
    assert "## Not done for this data" in report_md
    assert "**CIDEr** not ranked against: post-gen column 'CIDEr' is constant" in report_md
    excluded = pd.read_csv(out / "excluded.tsv", sep="\t")
    assert list(excluded.columns) == ["name", "kind", "reason"]
    kinds = dict(zip(excluded["name"], excluded["kind"]))
    assert kinds["CIDEr"] == "post-gen" and kinds["model-level decisions"] == "step"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["late_steps"]["skipped"]["model-level decisions"].startswith("only 1 model")
    table = pd.read_csv(out / "table.tsv", sep="\t")
    assert len(table) == 15 and table["CIDEr"].nunique() == 1


def _boom(*args, **kwargs):
    raise RuntimeError("provoked")


# Each late step, provoked to fail: where it is called from.
STEPS = [("ranking", pregen_jax.ranking, "rank"),
         ("model-level decisions", report, "model_level"),
         ("plots", report, "write_plots"),
         ("report", report, "render_report"),
         ("report", report, "unit_tests_section")]


@pytest.mark.parametrize(("step", "owner", "name"), STEPS, ids=[f"{s}:{n}" for s, _, n in STEPS])
def test_an_unexpected_error_in_a_late_step_writes_the_rest_and_names_the_step(tiny, step, owner, name, monkeypatch,
                                                                               capsys):
    config, out, code, _ = tiny
    assert code == 0
    (out / "table.tsv").unlink()
    (out / "manifest.json").unlink()
    monkeypatch.setattr(owner, name, _boom)
    code = cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"pregen-search run: error: step '{step}' failed: RuntimeError: provoked"), err
    assert "Traceback" not in err  # one line on the terminal; the traceback is in report.md
    assert (out / "table.tsv").is_file() and (out / "manifest.json").is_file()
    assert f"**{step}** FAILED: RuntimeError: provoked" in (out / "report.md").read_text()
    manifest = json.loads((out / "manifest.json").read_text())
    assert "provoked" in manifest["late_steps"]["failed"][step]


def test_late_steps_record_what_they_skip_and_what_fails():
    steps = LateSteps()
    assert steps.run("fine", lambda: 3, default=0) == 3

    def not_here():
        raise NotApplicable("only 1 model")
    assert steps.run("decisions", not_here, default=None) is None
    assert steps.run("plots", lambda: 1 / 0, default={}) == {}
    assert steps.skipped == {"decisions": "only 1 model"}
    assert steps.failed == {"plots": "ZeroDivisionError: division by zero"}
    assert "ZeroDivisionError" in steps.tracebacks["plots"]
    with pytest.raises(RuntimeError, match="step 'plots' failed: ZeroDivisionError"):
        steps.raise_failures("runs/x")
    with pytest.raises(KeyboardInterrupt):  # Ctrl-C is never swallowed
        steps.run("ranking", lambda: (_ for _ in ()).throw(KeyboardInterrupt), default=None)
