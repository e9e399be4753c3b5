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


def rnn_sizes(**values):
    return lambda config: config.setdefault("models", {}).setdefault("rnn", {}).update(values)


def swap_images(arrays):
    for name in ("probs", "ranks", "mask"):
        arrays[name] = arrays[name][[1, 0, *range(2, len(arrays[name]))]]


def drop_reference(arrays):
    arrays["mask"][3, 4] = False


def lengthen_reference(arrays):
    length = arrays["mask"][5, 2].sum()
    if length == arrays["mask"].shape[-1]:
        for name in ("probs", "ranks", "mask"):
            arrays[name] = np.concatenate([arrays[name], arrays[name][..., -1:]], -1)
    arrays["mask"][5, 2, length] = True


def latin1(path):
    path.write_bytes("a caf\u00e9 ball\n".encode("latin-1") * 12)


def flip_byte(path, at=0.5):
    data = bytearray(path.read_bytes())
    data[int(len(data) * at)] ^= 0xFF
    path.write_bytes(bytes(data))


def object_arrays(arrays):
    arrays["probs"] = np.array([list(row.ravel()) for row in arrays["probs"]] + [[0.5]], dtype=object)[:-1]


def tier_module(p, body):
    (p / "my_tiers.py").write_text(body)
    edit_config(p / "search.toml", section("pregen", modules=["my_tiers.py"]))


def garbage_jars(p):
    (p / "corenlp").mkdir()
    for jar in ("stanford-corenlp-3.6.0.jar", "stanford-corenlp-3.6.0-models.jar"):
        (p / "corenlp" / jar).write_bytes(b"PK\x03\x04 not really a jar")
    edit_config(p / "search.toml", section("postgen", metrics=["SPICE"], corenlp_dir="corenlp"))


def repeated_token_vocabulary(p):
    (p / "vocab.json").write_text(json.dumps({"tokens": ["<edge>", "<unk>", "a", "ball", "a"]}))
    edit_config(p / "search.toml", section("models", vocabulary="vocab.json"))


# (what is wrong, how to make it so, the message expected on stderr)
RUN_CASES = [
    ("empty config", lambda p: (p / "search.toml").write_text(""),
     r"search.toml: the config is empty; a search needs at least a \[data\] section"),
    ("BOM-only config", lambda p: (p / "search.toml").write_bytes(b"\xef\xbb\xbf\n"), r"the config is empty"),
    ("learning rate inf", lambda p: edit_config(p / "search.toml", section("training", learning_rate=float("inf"))),
     r"\[training\] learning_rate = inf: Input should be a finite number"),
    ("NaN in a nested section", lambda p: edit_config(p / "search.toml", section("training", learning_rate=float("nan"))),
     r"\[training\] learning_rate = nan: Input should be a finite number"),
    ("seed 2**63 - 1", lambda p: edit_config(p / "search.toml", lambda c: c.update(seed=2**63 - 1)),
     r"seed = 9223372036854775807: Input should be less than or equal to 4294967295"),
    ("data seed 2**32", lambda p: edit_config(p / "search.toml", section("data", seed=2**32)),
     r"\[data\] seed = 4294967296: Input should be less than or equal to 4294967295"),
    ("batch size 2**63", lambda p: edit_config(p / "search.toml", section("training", batch_size=2**63 - 1)),
     r"\[training\] batch_size = 9223372036854775807: Input should be less than or equal to 2147483647"),
    ("rnn a number", lambda p: edit_config(p / "search.toml", section("models", rnn=3)),
     r"\[models.rnn\] must be a table of settings, got 3"),
    ("architecture a path", lambda p: edit_config(
        p / "search.toml", lambda c: c["precomputed"][0].update(architecture="../../../x")),
     r"\[precomputed 1\] architecture = '../../../x': a name becomes part of file names"),
    ("run with a separator", lambda p: edit_config(p / "search.toml", lambda c: c["precomputed"][2].update(run="a/b")),
     r"\[precomputed 3\] run = 'a/b': a name becomes part of file names"),
    ("missing stop-word file", lambda p: edit_config(p / "search.toml", section("postgen", stopwords="nowhere.txt")),
     r"\[postgen\] stopwords = '.*nowhere.txt': no such file"),
    ("missing tier module", lambda p: edit_config(p / "search.toml", section("pregen", modules=["gone.py"])),
     r"\[pregen\] modules = '.*gone.py': no such file"),
    ("tier module calls sys.exit", lambda p: tier_module(p, "import sys\nsys.exit(3)\n"),
     r"\[pregen\] modules: importing '.*my_tiers.py' failed \(called sys.exit\(3\)\)"),
    ("tier module raises", lambda p: tier_module(p, "raise RuntimeError('no GPU here')\n"),
     r"importing '.*my_tiers.py' failed \(RuntimeError: no GPU here\)"),
    ("tier module registers a bad name", lambda p: tier_module(
        p, "from pregen_jax import tiers\n@tiers.register_aggregator('Bad-Name')\ndef f(v, m):\n    return v.sum(-1)\n"),
     r"importing '.*my_tiers.py' failed: tier function name 'Bad-Name'"),
    ("broken SPICE jars", garbage_jars,
     r"\[postgen\] metrics = \['SPICE'\]: SPICE cannot run here \(.*stanford-corenlp-3.6.0.jar is not a readable jar"),
    ("vocabulary repeats a token", repeated_token_vocabulary,
     r"vocab.json: vocabulary has repeated tokens \('a' at positions 2 and 4\)"),
    ("bit-flipped npz", lambda p: flip_byte(p / "model0.npz"), r"model0.npz: not a readable .npz file"),
    ("object arrays in the npz", lambda p: edit_npz(p / "model1.npz", object_arrays),
     r"model1.npz: holds object arrays"),
    ("Karpathy filename a list", lambda p: edit_json(p / "dataset_toy.json",
                                                     lambda d: d["images"][3].update(filename=["3.jpg", "x.jpg"])),
     r"dataset_toy.json: image entry 3: 'filename' = \[\"3.jpg\", \"x.jpg\"\]: must be a string"),
    ("Karpathy dataset name a list", lambda p: edit_json(p / "dataset_toy.json", lambda d: d.update(dataset=["a"])),
     r"dataset_toy.json: 'dataset' = \[\"a\"\]: must be a string"),
    ("Karpathy imgid a float", lambda p: edit_json(p / "dataset_toy.json",
                                                   lambda d: d["images"][1].update(filename="", imgid=1.5)),
     r"dataset_toy.json: image entry 1: 'imgid' = 1.5: must be a string \(the image's file name\) or an integer"),
    ("Karpathy split a list", lambda p: edit_json(p / "dataset_toy.json",
                                                  lambda d: d["images"][3].update(split=["test"])),
     r"dataset_toy.json: image '3.jpg': 'split' = \[\"test\"\]: must be a string"),
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
    ("embed_size 0", lambda p: edit_config(p / "search.toml", rnn_sizes(embed_size=0)),
     r"\[models.rnn\] embed_size = 0: Input should be greater than or equal to 1"),
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
    ("too few images", lambda p: edit_npz(p / "model2.npz", lambda a: a.update({k: v[:-1] for k, v in a.items() if v.ndim})),
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
     r"model1.txt: line 1 \(image .0\.jpg.\): an empty caption"),
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
    ("inf post-gen", GOOD_TABLE.replace("\t0.11\t", "\tinf\t", 1), r"line \d+: column 'CIDEr' is inf"),
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
    ("stray quote in a CSV", GOOD_TABLE.replace("\t", ",").replace(",0.22,", ',"0.22,', 1),
     r"table.tsv, line 3: unexpected end of data \(a quote left open\?\)"),
    ("stray quote in a TSV", GOOD_TABLE.replace("\t0.22\t", '\t"0.22\t', 1),
     r"table.tsv, line 3: column 'CIDEr' has '\"0.22', not a number"),
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


@pytest.mark.parametrize("damage, message", [
    (lambda p: tier_module(p, "raise RuntimeError('no GPU here')\n"), "no GPU here"),
    (lambda p: flip_byte(p / "model0.npz"), "not a readable .npz"),
    (lambda p: edit_config(p / "search.toml", section("postgen", metrics=["SPICE"], corenlp_dir=str(p))),
     "SPICE cannot run here"),
], ids=["tier module raises", "bit-flipped npz", "no metric can run"])
def test_a_rejected_input_leaves_no_out_folder(tmp_path, capsys, damage, message):
    """No marker, no XLA cache: the folder a rejected run would have created does not exist."""
    config = write_precomputed(tmp_path)
    damage(tmp_path)
    out = tmp_path / "new" / "out"
    assert cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "new").exists()


def test_line_separators_inside_captions_do_not_split_them(tmp_path):
    """U+2028, U+0085 and a form feed inside a caption stay inside it; \\r\\n ends a line; a BOM is dropped."""
    from pregen_jax.pipeline import SearchConfig, sources
    config_path = write_precomputed(tmp_path)
    lines = (tmp_path / "model1.txt").read_text().splitlines()
    lines[0], lines[4], lines[7] = "a red\u2028ball", "a blue\x85box", "a green\x0cring"
    (tmp_path / "model1.txt").write_bytes(b"\xef\xbb\xbf" + "\r\n".join(lines).encode() + b"\r\n")
    edit_json(tmp_path / "dataset_toy.json", lambda d: None)
    (tmp_path / "dataset_toy.json").write_bytes(b"\xef\xbb\xbf" + (tmp_path / "dataset_toy.json").read_bytes())
    config = SearchConfig.load(config_path)
    data = sources.load_data(config, False)
    captions = sources.precomputed_candidates(config, data)[1].captions
    assert len(captions) == 12
    assert captions[0] == ["a", "red", "ball"] and captions[4] == ["a", "blue", "box"]
    assert captions[7] == ["a", "green", "ring"]
    assert io.split_lines("a\u2028b\r\nc\x85d\n\ne") == ["a\u2028b", "c\x85d", "", "e"]


def test_a_rank_table_with_a_bom_keeps_its_first_column(tmp_path):
    path = tmp_path / "table.tsv"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_TABLE.encode())
    from pregen_jax import ranking
    assert list(ranking.read_table(path).columns)[0] == "dataset"
    assert cli.main(["rank", "--table", str(path), "--out", str(tmp_path / "out"), "--group-by", "dataset"]) == 0


def test_postgen_naming_a_pregen_column_is_refused(tmp_path, capsys):
    path = tmp_path / "table.tsv"
    path.write_text(GOOD_TABLE)
    out = tmp_path / "out"
    assert cli.main(["rank", "--table", str(path), "--out", str(out),
                     "--postgen", "CIDEr,mean_max_normcount_prefix0"]) == 2
    err = capsys.readouterr().err
    assert "'mean_max_normcount_prefix0' is a pre-gen column" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()


@pytest.mark.parametrize("argv, message", [
    (["unit-tests", "--search", "s", "--out", "o", "--seed", "-1"],
     "pregen-search unit-tests: error: argument --seed: '-1' is not a seed (an integer 0..4294967295)"),
    (["unit-tests", "--search", "s", "--out", "o", "--seed", str(2**32)], "argument --seed: '4294967296' is not a seed"),
    (["run", "--config", "c.toml", "--out", "o", "--workers", "x"], "argument --workers: not a number of workers"),
    (["rank", "--table", "t.tsv"], "the following arguments are required: --out"),
])
def test_usage_errors_are_one_line_naming_the_option(tmp_path, argv, message):
    done = subprocess.run([sys.executable, "-m", "pregen_jax.cli", *argv], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()


def test_a_metric_that_cannot_run_is_refused_unless_others_remain(tmp_path, monkeypatch):
    """No Java: a METEOR-only search is refused up front, naming METEOR and why; with CIDEr beside it,
    the check lets the search go on (it warns in one line)."""
    from pregen_jax import postgen
    from pregen_jax.pipeline import SearchConfig
    from pregen_jax.pipeline.preflight import check_metrics_can_run
    from pregen_jax.postgen import jvm
    config_path = write_precomputed(tmp_path)
    monkeypatch.setenv("PREGEN_JAVA", str(tmp_path / "no-java"))  # an explicit Java that does not run: no other tried
    jvm.java_problem.cache_clear()
    try:
        edit_config(config_path, section("postgen", metrics=["METEOR"], backend="coco"))  # METEOR's jar needs Java
        with pytest.raises(ValueError, match=r"\[postgen\] metrics = \['METEOR'\]: METEOR cannot run here "
                                             r"\(java not found: PREGEN_JAVA="):
            check_metrics_can_run(SearchConfig.load(config_path), "search.toml")
        edit_config(config_path, section("postgen", metrics=["METEOR", "CIDEr"], backend="coco"))
        config = SearchConfig.load(config_path)
        check_metrics_can_run(config, "search.toml")
        assert not postgen.metric_availability(config.postgen.options, ["METEOR"])["METEOR"][0]
    finally:
        jvm.java_problem.cache_clear()


def test_a_failing_tier_module_is_found_before_any_data_is_built(tmp_path, capsys, monkeypatch):
    """A shapes search would first build its dataset and train the image encoder: the module fails first."""
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "home-cache"))
    (tmp_path / "my_tiers.py").write_text("import sys\nsys.exit('missing dependency')\n")
    config = tmp_path / "search.toml"
    config.write_text(tomli_w.dumps({"name": "shapes", "pregen": {"modules": ["my_tiers.py"]},
                                     "postgen": {"metrics": ["CIDEr"]}}))
    assert cli.main(["run", "--config", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "my_tiers.py' failed (called sys.exit('missing dependency'))" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "home-cache").exists() and not (tmp_path / "out").exists()


def test_run_search_from_python_checks_like_the_cli_before_any_work(tmp_path):
    """``run_search`` refuses what the CLI refuses up front, with the same one-line error, and
    leaves nothing behind: a missing file the config names, features missing for models to run."""
    from pregen_jax.pipeline import SearchConfig, run_search
    config = SearchConfig.from_dict({"data": {"source": "shapes"},
                                     "postgen": {"metrics": ["CIDEr"], "stopwords": str(tmp_path / "none.txt")}})
    with pytest.raises(ValueError, match=r"\[postgen\] stopwords = .*none\.txt'?: no such file"):
        run_search(config, tmp_path / "out", progress=False)
    karpathy = SearchConfig.from_dict({"data": {"source": "karpathy", "karpathy_json": "x.json"}}, base=tmp_path)
    with pytest.raises(ValueError, match=r"config: \[data\] features is required.*'image_ids'.*docs/guides/search"):
        run_search(karpathy, tmp_path / "out", progress=False)  # says how to give features (issue 64)
    assert not (tmp_path / "out").exists()
