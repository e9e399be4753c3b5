"""Every bad input is a clear one-line error: exit code 2, one line on stderr naming the problem,
no traceback, and the --out folder exactly as it was."""
import json
import subprocess
import sys

import numpy as np
import pytest
import tomli_w

from pregen_jax import cli, io
from tests.builders import write_precomputed


def snapshot(folder):
    """Every file under ``folder`` with its bytes (None when the folder does not exist)."""
    if not folder.exists():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def edit_config(path, change):
    import tomllib
    config = tomllib.loads(path.read_text())
    change(config)
    path.write_text(tomli_w.dumps(config))


def edit_json(path, change):
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def edit_npz(path, change):
    with np.load(path) as npz:
        arrays = {k: npz[k] for k in npz.files}
    change(arrays)
    np.savez(path, **arrays)


def section(name, **values):
    return lambda config: config.setdefault(name, {}).update(values)


def captioner(**values):
    return lambda config: config.setdefault("models", {}).setdefault("captioner", {}).update(values)


def swap_images(arrays):
    for name in arrays:
        arrays[name] = arrays[name][[1, 0, *range(2, len(arrays[name]))]]


def drop_reference(arrays):
    arrays["mask"][3, 4] = False


def lengthen_reference(arrays):
    length = arrays["mask"][5, 2].sum()
    if length == arrays["mask"].shape[-1]:
        for name in arrays:
            arrays[name] = np.concatenate([arrays[name], arrays[name][..., -1:]], -1)
    arrays["mask"][5, 2, length] = True


def latin1(path):
    path.write_bytes("a caf\u00e9 ball\n".encode("latin-1") * 12)


# (what is wrong, how to make it so, the message expected on stderr)
RUN_CASES = [
    ("epochs 0", lambda p: edit_config(p / "search.toml", section("training", epochs=0)),
     r"search.toml: \[training\] epochs = 0: Input should be greater than or equal to 1"),
    ("negative learning rate", lambda p: edit_config(p / "search.toml", section("training", learning_rate=-1.0)),
     r"\[training\] learning_rate = -1.0: Input should be greater than 0"),
    ("max_len below min_len", lambda p: edit_config(p / "search.toml", section("generation", max_len=3, min_len=5)),
     r"\[generation\] max_len = 3 is below min_len = 5"),
    ("snapshot after the last epoch", lambda p: edit_config(p / "search.toml",
                                                            section("training", epochs=2, snapshot_epochs=[3])),
     r"\[training\] snapshot_epochs \[3\] lie beyond epochs = 2"),
    ("metrics a string", lambda p: edit_config(p / "search.toml", section("postgen", metrics="CIDEr")),
     r"\[postgen\] metrics = 'CIDEr': Input should be a valid list"),
    ("runs a string", lambda p: edit_config(p / "search.toml", section("models", runs="1")),
     r"\[models\] runs = '1': Input should be a valid integer"),
    ("embed_size 0", lambda p: edit_config(p / "search.toml", captioner(embed_size=0)),
     r"\[models.captioner\] embed_size = 0: Input should be greater than or equal to 1"),
    ("batch_size 0", lambda p: edit_config(p / "search.toml", section("training", batch_size=0)),
     r"\[training\] batch_size = 0"),
    ("seed a word", lambda p: edit_config(p / "search.toml", lambda c: c.update(seed="zero")),
     r"seed = 'zero': Input should be a valid integer"),
    ("unknown group_by", lambda p: edit_config(p / "search.toml", section("pregen", group_by="colour")),
     r"\[pregen\] group_by = 'colour': no column 'colour'"),
    ("unknown post-gen metric", lambda p: edit_config(p / "search.toml", section("postgen", metrics=["BLEURT"])),
     r"unknown post-gen metric 'BLEURT'"),
    ("unknown section", lambda p: (p / "search.toml").write_text((p / "search.toml").read_text() + "\n[wrong]\nx = 1\n"),
     r"search.toml: unknown setting 'wrong'"),
    ("TOML syntax", lambda p: (p / "search.toml").write_text("name = \n"), r"search.toml: not valid TOML"),
    ("two precomputed models share a run", lambda p: edit_config(
        p / "search.toml", lambda c: c["precomputed"][1].update(architecture="init")),
     r"\[\[precomputed\]\] entries 1 and 2 are both architecture 'init', run '1'"),
    ("images in another order", lambda p: edit_npz(p / "model1.npz", swap_images),
     r"init-1|merge-1 .*model1.npz.*image 0 \(0.jpg\), reference \d has \d+ positions"),
    ("a missing reference", lambda p: edit_npz(p / "model1.npz", drop_reference),
     r"model1.npz.*image 3 \(3.jpg\) has 4 references, but the corpus has 5"),
    ("a reference too long", lambda p: edit_npz(p / "model1.npz", lengthen_reference),
     r"model1.npz.*image 5 \(5.jpg\), reference 2 has \d+ positions, but the corpus reference has \d+ tokens"),
    ("too few images", lambda p: edit_npz(p / "model2.npz", lambda a: a.update({k: v[:-1] for k, v in a.items()})),
     r"model2.npz.*11 images, but the test split has 12"),
    ("NaN probability", lambda p: edit_npz(p / "model2.npz", lambda a: a["probs"].__setitem__((0, 0, 0), np.nan)),
     r"model2.npz: image 0, reference 0, position 0: probability is nan"),
    ("zero probability", lambda p: edit_npz(p / "model2.npz", lambda a: a["probs"].__setitem__((4, 1, 0), 0.0)),
     r"model2.npz: image 4, reference 1, position 0: probability is 0"),
    ("corrupt npz", lambda p: (p / "model0.npz").write_bytes(b"garbage"), r"model0.npz: not a readable .npz"),
    ("missing npz", lambda p: (p / "model0.npz").unlink(), r"model0.npz: RefProbs file not found"),
    ("a caption too many", lambda p: (p / "model1.txt").write_text((p / "model1.txt").read_text() + "a ball\n"),
     r"model1.txt: 13 captions but the test split has 12"),
    ("an empty caption", lambda p: (p / "model1.txt").write_text(
        "!!\n" + "\n".join((p / "model1.txt").read_text().splitlines()[1:]) + "\n"),
     r"model1.txt: line 1 is an empty caption"),
    ("Latin-1 captions", lambda p: latin1(p / "model1.txt"), r"model1.txt: not UTF-8 text"),
    ("duplicated test image", lambda p: edit_json(p / "dataset_toy.json",
                                                  lambda d: d["images"].append(dict(d["images"][0]))),
     r"dataset_toy.json: image '0.jpg' appears twice"),
    ("a non-string caption", lambda p: edit_json(p / "dataset_toy.json", lambda d: d["images"][2]["sentences"][0].update(
        raw=7)), r"dataset_toy.json: image '2.jpg', sentence 0: 'raw' must be a string"),
    ("an image without references", lambda p: edit_json(p / "dataset_toy.json",
                                                        lambda d: d["images"][2].update(sentences=[])),
     r"image 2.jpg has no reference captions"),
    ("an empty reference", lambda p: edit_json(p / "dataset_toy.json", lambda d: d["images"][2]["sentences"][0].update(
        raw="!!!")), r"image 2.jpg, caption 0 is empty after tokenisation"),
]


@pytest.mark.parametrize("damage, message", [case[1:] for case in RUN_CASES], ids=[case[0] for case in RUN_CASES])
def test_bad_search_input(tmp_path, capsys, damage, message):
    config = write_precomputed(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / io.OUT_MARKER).write_text("an earlier run's folder")
    (out / "earlier.txt").write_text("an earlier run's file")
    before = snapshot(out)
    damage(tmp_path)
    assert cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("pregen-search run: error: ")
    import re
    assert re.search(message, err), err
    assert snapshot(out) == before


def test_out_that_is_a_file_or_under_a_file(tmp_path, capsys):
    config = write_precomputed(tmp_path)
    (tmp_path / "taken").write_text("not a folder")
    for out, message in ((tmp_path / "taken", "is a file, not a folder"),
                         (tmp_path / "taken" / "run", "is a file, so the folder cannot be created")):
        assert cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "taken").read_text() == "not a folder"


GOOD_TABLE = "dataset\tCIDEr\tMETEOR\tmean_max_normcount_prefix0\tgeomean_join_pplx_none\n" + "".join(
    f"{d}\t{0.1 * k + 0.01 * (k % 3)}\t{0.2 + 0.01 * k}\t{0.05 * k + 0.02 * (k % 2)}\t{9 - 0.3 * k}\n"
    for d in ("a", "b") for k in range(1, 7))


def replace_line(table, number, line):
    lines = table.splitlines()
    lines[number - 1] = line
    return "\n".join(lines) + "\n"


RANK_CASES = [
    ("NaN post-gen", GOOD_TABLE.replace("\t0.11\t", "\tnan\t", 1), r"line \d+: column 'CIDEr' is nan"),
    ("inf post-gen", GOOD_TABLE.replace("\t0.11\t", "\tinf\t", 1), r"line \d+: column 'CIDEr' is inf"),
    ("empty post-gen cell", GOOD_TABLE.replace("\t0.11\t", "\t\t", 1), r"line \d+: column 'CIDEr' has an empty cell"),
    ("empty pre-gen cell", replace_line(GOOD_TABLE, 3, "a\t0.2\t0.22\t\t8.4"),
     r"line 3: column 'mean_max_normcount_prefix0' has an empty cell"),
    ("duplicated column", GOOD_TABLE.replace("METEOR", "CIDEr", 1), r"column 'CIDEr' appears twice"),
    ("ragged row", replace_line(GOOD_TABLE, 4, "a\t0.3\t0.23\t0.15"), r"line 4: 4 fields, but the header has 5"),
    ("group of two rows", GOOD_TABLE + "c\t0.5\t0.3\t0.2\t7\nc\t0.6\t0.31\t0.25\t6\n",
     r"group dataset = c has 2 row\(s\)"),
    ("every pre-gen column constant", "CIDEr\tmean_max_normcount_prefix0\n0.1\t1\n0.2\t1\n0.3\t1\n",
     r"no pre-gen metric left to rank: all 1 are inf, NaN or constant"),
    ("constant post-gen", "CIDEr\tmean_max_normcount_prefix0\n0.1\t1\n0.1\t2\n0.1\t3\n",
     r"post-gen column 'CIDEr' is constant"),
    ("not a number", GOOD_TABLE.replace("\t0.22\t", "\toops\t", 1), r"line 3: column 'CIDEr' has 'oops', not a number"),
    ("Latin-1 table", None, r"not UTF-8 text"),
]


@pytest.mark.parametrize("content, message", [case[1:] for case in RANK_CASES], ids=[c[0] for c in RANK_CASES])
def test_bad_rank_table(tmp_path, capsys, content, message):
    path = tmp_path / "table.tsv"
    if content is None:
        path.write_bytes(GOOD_TABLE.replace("dataset", "caf\u00e9").encode("latin-1"))
    else:
        path.write_text(content)
    out = tmp_path / "out"
    out.mkdir()
    (out / io.OUT_MARKER).write_text("an earlier run's folder")
    (out / "correlations_WMD.tsv").write_text("from an earlier run")
    before = snapshot(out)
    grouped = ["--group-by", "dataset"] if content and content.startswith("dataset") else []
    assert cli.main(["rank", "--table", str(path), "--out", str(out), *grouped]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "table.tsv" in err
    import re
    assert re.search(message, err), err
    assert snapshot(out) == before


def test_a_folder_of_other_files_is_never_replaced(tmp_path, capsys):
    """--out . in a project must not empty it: a folder pregen-jax did not write is refused."""
    path = tmp_path / "table.tsv"
    path.write_text(GOOD_TABLE)
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    before = snapshot(mine)
    assert cli.main(["rank", "--table", str(path), "--out", str(mine)]) == 2
    err = capsys.readouterr().err
    assert "holds files pregen-jax did not write ('notes.txt'" in err and len(err.strip().splitlines()) == 1
    assert snapshot(mine) == before


def test_good_table_ranks_and_replaces_stale_outputs(tmp_path):
    path = tmp_path / "table.tsv"
    path.write_text(GOOD_TABLE)
    out = tmp_path / "out"
    assert cli.main(["rank", "--table", str(path), "--out", str(out), "--group-by", "dataset"]) == 0
    (out / "correlations_WMD.tsv").write_text("from an earlier run")
    assert cli.main(["rank", "--table", str(path), "--out", str(out), "--group-by", "dataset"]) == 0
    assert sorted(p.name for p in out.iterdir() if p.name != io.OUT_MARKER) == ["correlations_CIDEr.tsv", "correlations_METEOR.tsv",
                                                     "excluded.tsv", "summary.md"]


def test_the_installed_command_prints_one_line(tmp_path):
    """The real entry point, in its own process: one line on stderr, exit code 2."""
    path = tmp_path / "table.tsv"
    path.write_text(GOOD_TABLE.replace("METEOR", "CIDEr", 1))
    done = subprocess.run([sys.executable, "-m", "pregen_jax.cli", "rank", "--table", str(path), "--out",
                           str(tmp_path / "out")], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "appears twice" in done.stderr
    assert not (tmp_path / "out").exists()


def test_captions_given_as_strings_are_refused():
    """A string where tokens are expected would be read one character per token: refuse it."""
    from pregen_jax.captioning.input_pipeline import encode_references
    from pregen_jax.datasets import Vocabulary
    vocab = Vocabulary(["a", "red", "ball"])
    assert encode_references([[["a", "red", "ball"]]], vocab)[0][:2] == (0, 0)
    with pytest.raises(ValueError, match=r"image 0, reference 0 is a string, not a list of tokens"):
        encode_references([["a red ball"]], vocab)
    with pytest.raises(ValueError, match=r"image 0's references are one string"):
        encode_references(["a red ball"], vocab)
