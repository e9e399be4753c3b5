"""Subword vocabularies: the BPE, the piece-to-word rule and a search with tokenizer = "bpe"."""
import pickle

import numpy as np
import pytest

from pregen_jax import RefProbs
from pregen_jax.captioning.input_pipeline import encode_references, reference_word_starts
from pregen_jax.datasets import Vocabulary, load_vocabulary, tokenize
from pregen_jax.datasets.tokenizer import BpeVocabulary, run_bpe, train_bpe
from pregen_jax.pieces import words_from_pieces
from tests.conftest import shared

CAPTIONS = [[tokenize(c) for c in refs] for refs in [
    ["A red ball above a blue box.", "a small red-ball", "Two balls, both red"],
    ["a green ring below the big box", "the ring is green and round"],
    ["boxes and balls and rings"],
]] * 5


@pytest.fixture(scope="module")
def bpe():
    return train_bpe(CAPTIONS, 60)


def test_bpe_pieces_stay_inside_words_and_decode_to_words(bpe):
    assert bpe.name == f"bpe-{len(bpe)}" and len(bpe) <= 60 and bpe.tokens[:2] == ["<edge>", "<unk>"]
    words = tokenize("The red balls, above; two green-rings!")
    ids, starts = bpe.encode(words), bpe.word_starts(words)
    assert len(ids) == len(starts) > len(words) and sum(starts) == len(words)
    assert bpe.decode(ids + [0, 5, 6]) == words            # stops at the edge token
    assert bpe.pieces("Red-balls!") == bpe.pieces("red balls")  # the alnum-lower rule first
    assert bpe.unknown_words(["red", "qz"]) == 1           # q and z are not in the training captions


def test_bpe_is_keyed_on_the_saved_file(bpe, tmp_path):
    path = tmp_path / "tokenizer.json"
    first = run_bpe(CAPTIONS, 60, path)
    assert path.read_text() == first.text and run_bpe([[["other"]]], 60, path).fingerprint() == first.fingerprint()
    loaded = load_vocabulary(path)
    assert isinstance(loaded, BpeVocabulary) and loaded.fingerprint() == first.fingerprint()
    assert pickle.loads(pickle.dumps(first)).encode(["red"]) == first.encode(["red"])
    path.write_text(first.text + "\n")  # the same tokenizer, another file: another key
    assert load_vocabulary(path).fingerprint() != first.fingerprint()


def test_word_vocabulary_is_the_one_piece_case(tmp_path):
    vocab = Vocabulary.build(CAPTIONS, 1)
    assert vocab.name == f"word-{len(vocab)}" and vocab.kind == "word"
    assert vocab.word_starts(["a", "red"]) == [True, True]
    vocab.save(tmp_path / "vocabulary.json")
    assert Vocabulary.load(tmp_path / "vocabulary.json").fingerprint() == vocab.fingerprint()


def test_word_rank_rule():
    # Word 1: pieces ranks 0, 0 -> 0 (top choice only when every piece is); word 2: 0, 3, 1 -> 3 (the largest);
    # word 3 (the end token): 2.
    log_probs = np.log([0.5, 0.8, 0.9, 0.1, 0.4, 0.3])
    words_lp, words_rank = words_from_pieces(log_probs, np.array([0, 0, 0, 3, 1, 2]),
                                             np.array([True, False, True, False, False, True]))
    np.testing.assert_allclose(np.exp(words_lp), [0.4, 0.9 * 0.1 * 0.4, 0.3])
    assert words_rank.tolist() == [0, 3, 2]


def test_reference_word_starts_follow_the_encoded_pieces(bpe):
    starts = reference_word_starts(CAPTIONS[:3], bpe)
    triples = encode_references(CAPTIONS[:3], bpe)
    for n, r, ids in triples:
        row = starts[n, r]
        assert row[:len(ids) + 1].sum() == len(CAPTIONS[n][r]) + 1 and not row[len(ids) + 1:].any()
    # A model's token-level numbers at these positions, taken to words: one position per word + end.
    mask = np.zeros(starts.shape, bool)
    for n, r, ids in triples:
        mask[n, r, :len(ids) + 1] = True
    tokens = RefProbs(np.where(mask, 0.5, 0.0), np.where(mask, 1, 0), mask, units="token")
    words = tokens.to_words(starts, vocabulary=bpe.name)
    assert words.vocabulary == bpe.name
    words.check_references(CAPTIONS[:3])
    pieces_per_word = [len(bpe.encode([w])) for w in CAPTIONS[0][0]]
    np.testing.assert_allclose(np.asarray(words.probs)[0, 0, :len(pieces_per_word)], 0.5 ** np.array(pieces_per_word))


def bpe_search(units: str) -> dict:
    """A tiny search on the built-in shapes data: a transformer and a merge model over a BPE of 100 pieces."""
    return {"name": "bpe-tiny",
            "data": {"train": 400, "val": 20, "test": 20, "encoder_epochs": 1, "tokenizer": "bpe", "vocab_size": 100},
            "models": {"architectures": ["transformer", "merge"], "runs": 1,
                       "rnn": {"embed_size": 32, "hidden_size": 32, "image_size": 32, "dropout": 0.0}},
            "training": {"epochs": 4, "batch_size": 32, "learning_rate": 0.01, "snapshot_epochs": []},
            "generation": {"beam_width": 2, "max_len": 12, "min_len": 2},
            "pregen": {"units": units}, "postgen": {"metrics": ["CIDEr", "Bleu_4"]}}


@pytest.mark.slow  # about 1 min on an idle 2-core machine (training, the encoder, the sweep's compilation)
def test_search_with_a_bpe_vocabulary_in_both_units(tmp_path):
    import pandas as pd

    from pregen_jax import cli
    from tests.builders import write_config

    out = tmp_path / "run"
    tables = {}
    for units in ("word", "token"):
        config = write_config(tmp_path / f"{units}.toml", bpe_search(units))
        assert cli.main(["run", "--config", str(config), "--out", str(out), "--no-progress"]) == 0
        tables[units] = pd.read_csv(out / "table.tsv", sep="\t")
    vocab = load_vocabulary(out / "tokenizer.json")
    (trained,) = (out / "cache" / "tokenizer").iterdir()  # trained once, reused by the second search
    assert trained.read_text() == (out / "tokenizer.json").read_text() and vocab.name == "bpe-100"
    for units, table in tables.items():
        assert len(table) == 2 * 15 and set(table["architecture"]) == {"transformer", "merge"}
        assert set(table["vocabulary"]) == {"bpe-100"} and set(table["units"]) == {units}
        assert set(table["tokenizer"]) == {"alnum-lower"}
    pregen = [c for c in tables["word"].columns if c.startswith("mean_mean_prob")]
    assert not np.allclose(tables["word"][pregen], tables["token"][pregen])  # pieces vs words
    report = (out / "report.md").read_text()
    assert "train 0 computed / 2 reused" in report and "pregen 2 computed" in report
    (captions,) = (out / "cache" / "captions").glob("merge-1-*/captions.txt")
    assert all(line.split() == tokenize(line) for line in captions.read_text().splitlines())  # words


def test_a_run_folder_trains_its_bpe_once_and_a_vocabulary_file_must_match_the_tokenizer(tmp_path):
    from pregen_jax.datasets import CaptionDataset, CaptionSplit
    from pregen_jax.pipeline.config import SearchConfig
    from pregen_jax.pipeline.sources import build_vocabulary

    split = CaptionSplit([str(n) for n in range(len(CAPTIONS))], CAPTIONS)
    dataset = CaptionDataset("toy", {"train": split, "test": split})
    config = SearchConfig.from_dict({"data": {"tokenizer": "bpe", "vocab_size": 60}})
    first = build_vocabulary(config, dataset, tmp_path)
    (saved,) = (tmp_path / "cache" / "tokenizer").iterdir()
    assert build_vocabulary(config, dataset, tmp_path).fingerprint() == first.fingerprint()
    assert build_vocabulary(SearchConfig(), dataset).kind == "word"
    words = SearchConfig.from_dict({"models": {"vocabulary": str(saved)}})
    with pytest.raises(ValueError, match=r"a bpe vocabulary \(bpe-\d+\), but \[data\] tokenizer = 'word'"):
        build_vocabulary(words, dataset)


def test_token_level_numbers_against_word_references_are_called_a_tokenization_problem(bpe):
    pieces = [[bpe.encode(ref) + [0] for ref in refs] for refs in CAPTIONS[:3]]
    tokens = RefProbs.from_token_scores([[np.full(len(p), -1.0) for p in refs] for refs in pieces],
                                        [[np.zeros(len(p), int) for p in refs] for refs in pieces])
    with pytest.raises(ValueError, match="image 0, reference 0 has .* a tokenization problem.*word_starts"):
        tokens.check_references(CAPTIONS[:3])


def test_bpe_encodes_word_by_word_as_the_tokenizer_encodes_whole_captions():
    """Each distinct word is encoded once and captions joined from their words' pieces: the same ids,
    word starts and unknown-word counts as the tokenizer's own encoding of every Flickr8k caption."""
    from pregen_jax.datasets import read_flickr8k
    data = read_flickr8k(shared("flickr8k"))
    captions = [refs for split in ("train", "val", "test") for refs in data[split].captions]
    vocab = train_bpe(captions[:2000], 1000)  # small: many test words split into pieces, some unknown letters
    unknown = 0
    for refs in captions[::4]:
        for words in refs:
            whole = vocab.tokenizer.encode(list(words), is_pretokenized=True, add_special_tokens=False)
            word_ids = whole.word_ids
            assert vocab.encode(words) == whole.ids, words
            assert vocab.word_starts(words) == [k == 0 or word_ids[k] != word_ids[k - 1] for k in range(len(word_ids))]
            expected = len({w for i, w in zip(whole.ids, word_ids) if i == vocab.unk_id})
            assert vocab.unknown_words(words) == expected, words
            unknown += expected
    assert unknown > 0  # the unknown-word path was exercised
