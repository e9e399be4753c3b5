"""`pregen-search export-references`: the test references, in RefProbs order, for a model elsewhere."""
import dataclasses
import json

import numpy as np
import pytest

from pregen_jax import RefProbs, cli
from pregen_jax.datasets import read_flickr8k, tokenize
from pregen_jax.datasets.tokenizer import train_bpe
from pregen_jax.external.references import (
    attach_references,
    export_references,
    read_exported_references,
    read_test_split,
    references,
)
from pregen_jax.pipeline import SearchConfig
from pregen_jax.pipeline.sources import load_data
from pregen_jax.refprobs import reference_fingerprint
from tests.builders import write_config, write_precomputed, write_training_corpus
from tests.conftest import shared


def read_rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_follows_the_order_a_search_checks(tmp_path, capsys):
    config_path = write_precomputed(tmp_path, models=1)
    out = tmp_path / "refs.jsonl"
    assert cli.main(["export-references", "--config", str(config_path), "--out", str(out)]) == 0
    assert "60 references of 12 test images" in capsys.readouterr().out
    rows = read_rows(out)
    test = load_data(SearchConfig.load(config_path), progress=False).test  # what a search reads
    expected = [(image_id, i, r, tokens) for i, (image_id, refs) in enumerate(zip(test.image_ids, test.captions))
                for r, tokens in enumerate(refs)]
    assert [(row["image_id"], row["image"], row["ref"], row["tokens"]) for row in rows] == expected
    # no pieces (a word vocabulary); raw: the config scores post-gen metrics with ptb, on the corpus's text
    assert all(list(row) == ["image_id", "image", "ref", "text", "tokens", "tokenizer", "raw"] for row in rows)
    assert [row["raw"] for row in rows] == [text for refs in test.raw_text() for text in refs]
    assert {row["tokenizer"] for row in rows} == {"alnum-lower"}  # what made the tokens, recorded
    assert all(row["text"].split() == row["tokens"] == tokenize(row["text"]) for row in rows)
    # A RefProbs built row by row from the file is one the search accepts for this corpus.
    lengths = [[0] * 5 for _ in range(12)]
    for row in rows:
        lengths[row["image"]][row["ref"]] = len(row["tokens"]) + 1
    probs = [[[0.5] * n for n in image] for image in lengths]
    RefProbs.from_lists(probs, [[[0] * n for n in image] for image in lengths]).check_references(
        test.captions, test.image_ids)
    RefProbs.load(tmp_path / "model0.npz").check_references([[row["tokens"] for row in rows if row["image"] == i]
                                                             for i in range(12)])
    assert read_exported_references(out)[7].tokens == rows[7]["tokens"]


def test_flickr8k_ids_are_file_names_and_caption_less_lines_are_skipped(tmp_path, capsys):
    folder = shared("flickr8k")
    config = write_config(tmp_path / "f8k.toml", {"data": {"source": "flickr8k", "flickr8k_dir": str(folder)},
                                                  "precomputed": [{"architecture": "x", "run": "1",
                                                                   "ref_probs": "x.npz", "captions": "x.txt"}]})
    out = tmp_path / "refs.jsonl"
    assert cli.main(["export-references", "--config", str(config), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "1.jpg" in captured.err  # the test list's lines that are not images
    rows = read_rows(out)
    with pytest.warns(UserWarning):
        test = read_flickr8k(folder)["test"]
    assert len(test) == rows[-1]["image"] + 1 == 1000
    assert rows[0]["image_id"] == test.image_ids[0] and rows[0]["image_id"].endswith(".jpg")
    assert not {"1.jpg", "2.jpg", "3.jpg", "4.jpg", "5.jpg"} & {row["image_id"] for row in rows}
    # References in the token file's order: reference r of an image is its line #r.
    image_id = rows[-1]["image_id"]
    token_lines = [line.split("\t", 1)[1] for line in (folder / "Flickr8k.token.txt").read_text().splitlines()
                   if line.startswith(image_id + "#")]
    assert [row["tokens"] for row in rows if row["image_id"] == image_id] == [tokenize(t) for t in token_lines]


def test_shapes_ids_without_training_an_encoder(tmp_path, monkeypatch):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    config = SearchConfig.from_dict({"data": {"source": "shapes", "train": 6, "val": 5, "test": 7}})
    rows = export_references(config, tmp_path / "refs.jsonl")
    assert [row.image_id for row in rows if row.ref == 0] == [f"test-{n:05d}" for n in range(7)]
    assert [row.image for row in rows] == sorted(row.image for row in rows)
    assert not list((tmp_path / "cache").glob("encoder-*"))  # no image encoder was trained


def test_pieces_come_from_the_vocabularys_encoder(tmp_path):
    _, test = read_test_split(SearchConfig.load(write_precomputed(tmp_path, models=1)))

    def pieces(tokens):  # a stand-in subword split: words of 4+ letters in two pieces
        return [p for word in tokens for p in ((word[:2], "##" + word[2:]) if len(word) > 3 else (word,))]
    rows = references(test, pieces)
    assert all(row.pieces == pieces(row.tokens) for row in rows)
    assert "pieces" in rows[0].to_json() and "pieces" not in references(test)[0].to_json()
    assert np.sum([len(row.tokens) for row in rows]) == sum(len(ref) for refs in test.captions for ref in refs)


@pytest.mark.parametrize("damage, message", [
    (lambda p: (p / "dataset_toy.json").unlink(), r"dataset_toy.json: Karpathy JSON not found"),
    (lambda p: p.joinpath("search.toml").write_text(
        p.joinpath("search.toml").read_text().replace('source = "karpathy"', 'source = "coco"')),
     r"search.toml: \[data\] source = 'coco': Input should be"),
    (lambda p: p.joinpath("search.toml").write_text(
        p.joinpath("search.toml").read_text().replace(', captions = "model0.txt"', '')),
     r"search.toml: \[precomputed 1\] captions is required"),
])
def test_bad_config_is_one_line_and_writes_nothing(tmp_path, capsys, damage, message):
    import re
    config = write_precomputed(tmp_path, models=1)
    damage(tmp_path)
    out = tmp_path / "refs.jsonl"
    assert cli.main(["export-references", "--config", str(config), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pregen-search export-references: error: ") and len(err.strip().splitlines()) == 1
    assert re.search(message, err), err
    assert not out.exists() and not list(tmp_path.glob(".refs*"))


def test_out_that_is_a_folder_is_refused(tmp_path, capsys):
    config = write_precomputed(tmp_path, models=1)
    assert cli.main(["export-references", "--config", str(config), "--out", str(tmp_path)]) == 2
    assert "is a folder; give the name of the JSONL file" in capsys.readouterr().err


def test_bpe_pieces_are_the_vocabularys_pieces_of_each_word(tmp_path):
    write_training_corpus(tmp_path)
    data = {"source": "karpathy", "karpathy_json": "dataset_toy.json", "features": "feats.npy", "tokenizer": "bpe",
            "vocab_size": 30}
    _, test = read_test_split(SearchConfig.from_dict({"data": data}, base=tmp_path))
    vocab = train_bpe(test.captions, 30)  # another BPE than the train split's: the config names its file
    vocab.save(tmp_path / "tokenizer.json")
    config = SearchConfig.from_dict({"data": data, "models": {"vocabulary": "tokenizer.json"}}, base=tmp_path)
    rows = export_references(config, tmp_path / "refs.jsonl")
    assert all(row.pieces == [vocab.tokens[i] for i in vocab.encode(row.tokens)] for row in rows)
    assert all("".join(row.pieces).replace("##", "") == "".join(row.tokens) for row in rows)
    assert any(len(row.pieces) > len(row.tokens) for row in rows)  # some words are split
    assert read_rows(tmp_path / "refs.jsonl")[0]["pieces"] == rows[0].pieces
    trained = export_references(SearchConfig.from_dict({"data": data}, base=tmp_path), tmp_path / "own.jsonl")
    assert all(row.pieces and "".join(row.pieces).replace("##", "") == "".join(row.tokens) for row in trained)


def test_attach_references_fingerprints_what_the_search_scores(tmp_path):
    config = SearchConfig.load(write_precomputed(tmp_path, models=1))
    rows = export_references(config, tmp_path / "refs.jsonl")
    test = load_data(config, progress=False).test
    lengths = [[len(row.tokens) + 1 for row in rows if row.image == i] for i in range(len(test))]
    vocabulary_size = 7
    rng = np.random.default_rng(0)
    targets = [[rng.integers(0, vocabulary_size, n) for n in image] for image in lengths]
    log_probs = [[np.log(rng.dirichlet(np.ones(vocabulary_size), n)) for n in image] for image in lengths]
    words = RefProbs.from_log_probs(log_probs, targets)
    stamped = attach_references(words, tmp_path / "refs.jsonl")
    assert stamped.units == "word" and stamped.references.vocabulary == "unknown"
    assert stamped.references.tokens == reference_fingerprint(test.captions, load_data(config, False).vocab).tokens
    np.testing.assert_array_equal(stamped.probs, words.probs)
    # Two pieces for the first word of every reference: token level, fingerprinted as such.
    pieces = RefProbs.from_log_probs([[np.vstack([lp[:1], lp]) for lp in image] for image in log_probs],
                                     [[np.r_[t[:1], t] for t in image] for image in targets])
    assert attach_references(pieces, tmp_path / "refs.jsonl").references.units == "token"
    fewer = RefProbs.from_log_probs([[lp[1:] for lp in image] for image in log_probs],
                                    [[t[1:] for t in image] for image in targets])
    with pytest.raises(ValueError, match=r"image 0 \(0.jpg\), reference 0 has \d+ positions, fewer than its"):
        attach_references(fewer, tmp_path / "refs.jsonl")
    shuffled = RefProbs.from_log_probs(log_probs[::-1], targets[::-1])
    with pytest.raises(ValueError, match=r"refs.jsonl: image 0 \(0.jpg\)(, reference \d)? has \d+"):
        attach_references(dataclasses.replace(shuffled, units="word"), tmp_path / "refs.jsonl")


def test_export_needs_only_the_data_section(tmp_path, capsys):
    """The natural order: export first, from a config with only [data] (no features, no models)."""
    write_training_corpus(tmp_path)
    config = tmp_path / "export.toml"
    config.write_text('[data]\nsource = "karpathy"\nkarpathy_json = "dataset_toy.json"\n')
    out = tmp_path / "refs.jsonl"
    assert cli.main(["export-references", "--config", str(config), "--out", str(out)]) == 0, capsys.readouterr().err
    assert "60 references of 20 test images" in capsys.readouterr().out
    assert len(read_rows(out)) == 60
    # The same config is refused, before any work, by a search that would have to run models.
    run_out = tmp_path / "run"
    assert cli.main(["run", "--config", str(config), "--out", str(run_out)]) == 2
    assert "[data] features is required to train or run caption models" in capsys.readouterr().err
    assert not run_out.exists()


def test_an_export_scores_with_the_tokenizer_its_search_scores_with(tmp_path):
    """A ptb search's export carries each reference's raw text, which evaluate reads with ptb (as the
    search scored); an alnum-lower search's export does not, and evaluate reads its tokens as they are."""
    from pregen_jax.captionfiles import read_references
    config_path = write_precomputed(tmp_path, models=1)
    ptb = export_references(SearchConfig.load(config_path), tmp_path / "ptb.jsonl")
    config = SearchConfig.load(config_path)
    config = dataclasses.replace(config, postgen=dataclasses.replace(config.postgen, tokenizer="alnum-lower"))
    alnum = export_references(config, tmp_path / "alnum.jsonl")
    assert all(row.raw is not None for row in ptb) and all(row.raw is None for row in alnum)
    raw_refs, token_refs = read_references(tmp_path / "ptb.jsonl"), read_references(tmp_path / "alnum.jsonl")
    assert raw_refs.tokenizer is None and token_refs.tokenizer == "alnum-lower"
    assert [t for texts in raw_refs.captions.values() for t in texts] == [row.raw for row in ptb]
    assert [t for texts in token_refs.captions.values() for t in texts] == [row.text for row in alnum]
    lines = (tmp_path / "ptb.jsonl").read_text().splitlines()
    (tmp_path / "mixed.jsonl").write_text("\n".join([lines[0], (tmp_path / "alnum.jsonl").read_text().splitlines()[1]]))
    with pytest.raises(ValueError, match=r"mixed\.jsonl: row 2 lacks 'raw' and row 1 does not"):
        read_references(tmp_path / "mixed.jsonl")
