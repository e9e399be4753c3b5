"""Each job works as its guide shows (issue 37 item 4): docs/guides/against-a-search.md runs as
written, on the small search of trained models it makes, and each job's test checks what the
guide's blocks printed and wrote. (tests/test_docs_examples.py leaves this page to this file, so
its search is trained once.)"""
import contextlib
import io
import subprocess
import sys

import pandas as pd
import pytest

from pregen_jax import cli
from pregen_jax.external import attach_references
from tests.conftest import ROOT
from tests.test_docs_examples import run_block, runnable

GUIDE = ROOT / "docs" / "guides" / "against-a-search.md"


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
    assert "CIDEr (range [0, inf); 90% intervals" in out and "mine" in out and "s (the whole run)" in out
    # Without the search's fingerprint (attach_references alone), the refusal says what differs and
    # how to fix it, as the guide shows.
    with contextlib.chdir(folder):
        attach_references(namespace["ref_probs"], "refs.jsonl").save("bare.npz")
        assert cli.main(["predict", "--search", "runs/toy", "--refprobs", "bare.npz"]) == 2
    error = capsys.readouterr().err
    assert "it does not say which vocabulary its model reads, and the search's models read word-" in error
    assert "attach_search_fingerprint(ref_probs, 'refs.jsonl')" in error


def test_select_races_models_that_exist_only_as_captions(guide):
    folder, _, _ = guide
    out, _ = _printed(guide, "--captions good.jsonl poor.jsonl")
    table = pd.read_csv(folder / "runs" / "toy-select" / "select.tsv", sep="\t")
    picked = table[table["picked"]].iloc[0]
    assert (picked["source"], picked["run"]) == ("captions", "good.jsonl")
    assert "at 95% confidence for the whole race" in out and "s the whole run" in out
    assert "the pick's estimate is optimistic" in out
    # the Python race: the search's models and the user's own candidate, as the guide builds them
    table = guide[1]["result"].race.table
    search = {f"{arch}-1{epoch}" for arch in ("init", "par", "merge") for epoch in ("", "-e2")}  # finals, snapshots
    assert set(table["candidate"]) == search | {"mine"} and table["picked"].sum() == 1


def test_a_captions_file_of_other_images_gets_a_warning(guide):
    _, err = _printed(guide, "--captions other-dataset.txt shifted.txt")
    assert "warning: other-dataset.txt: only 14% of the captions' words occur in the references' vocabulary " \
           "(share of caption words in the references' vocabulary" in err
    assert "warning: shifted.txt: its captions fit the references of the images 1 line further on better than " \
           "their own (own-image word overlap" in err
    assert "other-dataset.txt: its captions fit" not in err  # captions that fit no image are not "misordered"


def test_no_stray_warning_when_a_child_starts_after_jax():
    """Java children (METEOR, SPICE) start with preexec_fn, a fork JAX warns about; never printed."""
    code = ("import jax.numpy as jnp\njnp.zeros(3).block_until_ready()\nfrom pregen_jax import processes\n"
            "processes.popen([sys.executable, '-c', 'pass']).wait()\n")
    done = subprocess.run([sys.executable, "-c", "import sys\n" + code], capture_output=True, text=True, check=True)
    assert "os.fork()" not in done.stderr and "Warning" not in done.stderr, done.stderr
