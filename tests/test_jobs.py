"""Each job works as its guide shows (issue 37 item 4): docs/guides/bring-your-own-model.md runs as
written, on the small search of trained models it makes and the search of numpy models it runs,
and each job's test checks what the guide's blocks printed and wrote. (tests/test_docs_examples.py
leaves this page to this file, so its searches run once.)"""
import contextlib
import io
import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from pregen_jax import cli, postgen
from pregen_jax.datasets import tokenize
from pregen_jax.external import attach_references
from tests.conftest import ROOT
from tests.test_docs_examples import run_block, runnable

GUIDE = ROOT / "docs" / "guides" / "bring-your-own-model.md"


@pytest.fixture(scope="module")
def guide(tmp_path_factory):
    """The guide run in a scratch folder: (folder, its Python namespace, {command: (stdout, stderr)})
    for each shell line's command name and first file (e.g. ``select other-dataset.txt``)."""
    folder = tmp_path_factory.mktemp("jobs")
    namespace, printed = {"__name__": "__main__"}, {}
    with contextlib.chdir(folder):
        for block in runnable(GUIDE):
            out, err = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                    run_block(block, namespace)
            except AssertionError as failure:
                raise AssertionError(f"{failure}\n{err.getvalue()[-3000:]}") from None
            if block.language == "bash":
                printed[block.where] = (out.getvalue(), err.getvalue())
    return folder, namespace, printed


def _printed(guide, command: str) -> tuple[str, str]:
    """(stdout, stderr) of the guide's shell block whose code contains ``command``."""
    for where, streams in guide[2].items():
        line = next(b for b in runnable(GUIDE) if b.where == where).code
        if command in line:
            return streams
    raise KeyError(command)


def test_a_model_of_any_framework_is_predicted_against_a_search(guide, capsys):
    folder, namespace, _ = guide
    out, _ = _printed(guide, "pregen-search predict")
    assert out.startswith("calibration: 6 usable model(s) of the search's 6; 80% intervals need at least 4")
    assert "CIDEr (range [0, inf); 80% conformal sets" in out and "mine" in out and "s (the whole run)" in out
    # one of the search's own models, exported as arrays the way a foreign model is: inside the domain, a number
    # with its set (the guide's own block asserts, at 0.7, a bounded one for every post-gen metric and predictor)
    own = [line for line in out.splitlines() if line.lstrip().startswith("own ")]
    assert own and all(re.search(r"\d\.\d{3} [\[(]", line) and " ok " in line and "none" not in line for line in own)
    # the random bigram: a row without a number says why, in a line of its own
    mine = [line for line in out.splitlines() if line.lstrip().startswith("mine ")]
    assert mine and all("none" in line for line in mine) and "  why (mine, from " in out
    # Without the search's fingerprint (attach_references alone), the refusal says what differs and
    # how to fix it, as the guide shows.
    with contextlib.chdir(folder):
        attach_references(namespace["ref_probs"], "refs.jsonl").save("bare.npz")
        assert cli.main(["predict", "--search", "runs/toy", "--refprobs", "bare.npz", "--level", "0.8"]) == 2
    error = capsys.readouterr().err
    assert "it does not say which vocabulary its model reads, and the search's models read word-" in error
    assert "attach_search_fingerprint(ref_probs, 'refs.jsonl')" in error


def test_select_races_models_that_exist_only_as_captions(guide):
    folder, _, _ = guide
    out, _ = _printed(guide, "--captions good.jsonl poor.jsonl")
    table = pd.read_csv(folder / "runs" / "toy-select" / "select.tsv", sep="\t")
    picked = table[table["picked"]].iloc[0]
    assert (picked["source"], picked["run"]) == ("captions", "good.jsonl")
    assert out.startswith(("separated: ", "not separated: ", "within ")) and len(out.splitlines()) <= 6
    whole = (folder / "runs" / "toy-select" / "summary.txt").read_text()  # the whole answer (issue 57)
    assert "at 95% for the whole race" in whole and "s the whole run" in whole, whole
    assert "the estimate is optimistic" in whole and "within: the pick is" in whole
    # the Python race: the search's models and the user's own candidate, as the guide builds them
    table = guide[1]["result"].race.table
    search = {f"{arch}-1{epoch}" for arch in ("init", "par", "merge") for epoch in ("", "-e2")}  # finals, snapshots
    assert set(table["candidate"]) == search | {"mine"} and table["picked"].sum() == 1


_SHARE = re.compile(r"bottom-half share (\d\.\d{3})")
_VARIES = re.compile(r"about \d+% \[\d+%, \d+%\]|bottom-half share \d\.\d{3}")


def _assert_the_guide_shows(printed: str) -> None:
    """The guide shows what the check prints, word for word, but for the share and the estimate: they
    may come from models trained here, whose floats differ in the last bits from CPU to CPU; the
    share must agree within 0.05."""
    shown = [line for line in GUIDE.read_text().splitlines()
             if _VARIES.sub("", line) == "warning: " + _VARIES.sub("", printed)]
    assert shown, f"the guide does not show: {printed}"
    if _SHARE.search(printed):
        got, want = (float(_SHARE.search(text).group(1)) for text in (printed, shown[0]))
        assert abs(got - want) <= 0.05, (got, want)


def test_a_captions_file_of_other_images_gets_a_warning(guide):
    """A file shifted by one image is flagged by the own-image check (datasets/caption_fit.py), and
    one sentence of another dataset on every image is said to be beyond it (too generic: any
    pairing gives it the same share), as the guide shows; the guide's own models' files are not."""
    _, err = _printed(guide, "--captions other-dataset.txt shifted.txt")
    warned = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert [line.split(":")[1].strip() for line in warned] == ["other-dataset.txt", "shifted.txt"]
    assert "the own-image check cannot see captions moved to other images in it" in warned[0]
    assert "of its captions look like captions of other images (bottom-half share " in warned[1]
    assert "this check cannot tell these apart" in warned[1] and not any("key it by image_id" in w for w in warned)
    for line in warned:
        _assert_the_guide_shows(line.removeprefix("warning: "))
    assert "bottom-half share" not in _printed(guide, "--captions good.jsonl poor.jsonl")[1]


def test_predict_warns_on_captions_of_other_images(guide, capsys):
    """predict --captions runs the same check as select (on the toy search's 25 test images)."""
    with contextlib.chdir(guide[0]):
        assert cli.main(["predict", "--search", "runs/toy", "--refprobs", "mine.npz", "checkpoint.npz",
                         "--captions", "other-dataset.txt", "shifted.txt", "--level", "0.8"]) == 0
    err = capsys.readouterr().err
    warned = [line.split(":")[1].strip() for line in err.splitlines() if line.startswith("warning: ")]
    assert warned == ["other-dataset.txt", "shifted.txt"], err
    assert all("bottom-half share " in line or "cannot see captions moved" in line
               for line in err.splitlines() if line.startswith("warning: "))


def test_a_search_of_models_of_any_framework_reads_their_files_right(guide):
    """The numpy models' search: the export needs only [data]; predict prints the new model's
    predictions beside its measured scores; the search read the shuffled, id-keyed caption files
    right (its CIDEr per model is CIDEr of each file's captions matched to the exported references
    by image id), and more skill gives more CIDEr."""
    folder = guide[0]
    export = next(b for b in runnable(GUIDE) if b.language == "toml" and b.code.startswith("# export.toml"))
    assert export.code.count("[") == 1
    out, _ = _printed(guide, "--refprobs numpy-new.npz")
    assert "numpy-new" in out and "CIDEr" in out and "measured" in out, out
    refs = [json.loads(line) for line in (folder / "numpy-refs.jsonl").read_text().splitlines()]
    gts = {}
    for ref in refs:
        gts.setdefault(ref["image_id"], []).append(ref["text"])
    models = {row[1]: float(row[3]) for row in (line.split("\t") for line in (folder / "runs/numpy/models.tsv").read_text().splitlines())
              if row[0] == "numpy"}
    for run in "1234":
        res = {row["image_id"]: [" ".join(tokenize(row["caption"]))]
               for row in map(json.loads, (folder / f"numpy-{run}.jsonl").read_text().splitlines())}
        assert models[run] == pytest.approx(postgen.CIDEr().compute_score(gts, res)[0], abs=1e-9)
    assert [models[run] for run in "1234"] == sorted(models.values())


def test_no_stray_warning_when_a_child_starts_after_jax():
    """Java children (METEOR, SPICE) start with preexec_fn, a fork JAX warns about; never printed."""
    code = ("import jax.numpy as jnp\njnp.zeros(3).block_until_ready()\nfrom pregen_jax import processes\n"
            "processes.popen([sys.executable, '-c', 'pass']).wait()\n")
    done = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, check=True)
    assert "os.fork()" not in done.stderr and "Warning" not in done.stderr, done.stderr
