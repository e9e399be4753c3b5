"""A paraphrase table of some words (evaluate's first run: ``paraphrase.table_of_words``) holds
exactly the entries of the whole table that sentences of those words can use, in the table's order."""
import gzip

import numpy as np
import pytest

from pregen_jax import io
from pregen_jax.postgen.meteor import paraphrase, paraphrase_build
from pregen_jax.postgen.meteor.paraphrase import ParaphraseTable
from tests.test_meteor_cache import _installed_table, _sample_table


def _sentences(source) -> list[tuple[str, ...]]:
    """Sentences that meet the sample's entries: every 500th entry's phrase, its paraphrase and a word of
    the next entry (phrases of these words the table has, and many it has not), and the odd lines' words."""
    with gzip.open(source, "rb") as f:
        lines = f.read().decode("utf-8", "replace").split("\n")
    refs, paras = lines[1::3], lines[2::3]
    sentences = [tuple(refs[k].split() + paras[k].split() + paras[k + 1].split()[:1]) for k in range(0, 19_500, 500)]
    return sentences + [("0", "two", "spaces", "again", "x", "y", "z")]


def _usable(source, sentences: list[tuple[str, ...]]) -> list[tuple[bytes, bytes]]:
    """The oracle: (reference phrase, paraphrase) of every entry whose phrase and paraphrase occur in some
    sentence, or are made of their words and neighbour pairs, in file order."""
    with gzip.open(source, "rb") as f:
        lines = f.read().split(b"\n")
    grams = _grams(sentences)
    made = lambda line: all(w in grams for w in line.split(b" ") if w) and all(  # noqa: E731
        b" ".join(pair) in grams for pair in zip(line.split(), line.split()[1:]))
    return [(r, p) for r, p in zip(lines[1::3], lines[2::3]) if made(r) and made(p)]


def _grams(sentences: list[tuple[str, ...]]) -> frozenset[bytes]:
    """The sentences' words and neighbour pairs, UTF-8."""
    return frozenset(g.encode() for s in sentences for g in (*s, *map(" ".join, zip(s, s[1:]))))


def _found(table: ParaphraseTable, sentence: tuple[str, ...], sentences: list[tuple[str, ...]]) -> list[tuple]:
    """Every (start, phrase length, paraphrase) the table offers the sentence whose paraphrase can occur in
    ``sentences`` (their words, neighbours in them; else it matches nowhere), walked in Python: a
    phrase's key looked up, its words checked."""
    grams = _grams(sentences)
    ids = [table.word_id(w) for w in sentence]
    vocab = {table.word_id(w): w for s in sentences for w in s if table.word_id(w) >= 0}
    found = []
    for start in range(len(sentence)):
        for length in range(1, min(table.max_phrase, len(sentence) - start) + 1):
            phrase = ids[start:start + length]
            k = int(np.searchsorted(table.keys, np.uint64(paraphrase.phrase_key(phrase))))
            if min(phrase) < 0 or k == len(table.keys) or table.keys[k] != paraphrase.phrase_key(phrase):
                continue
            for entry in range(table.entry_offsets[k], table.entry_offsets[k + 1]):
                said = table.words(entry)
                if all(w in vocab for w in said):
                    said = tuple(vocab[w] for w in said)
                    if all(" ".join(pair).encode() in grams for pair in zip(said, said[1:])):
                        found.append((start, length, said))
    return found


def test_a_table_of_words_holds_the_entries_made_of_them_in_order(tmp_path, monkeypatch):
    source = _sample_table(tmp_path, 20_000)
    monkeypatch.setattr(paraphrase_build, "BLOCK", 4096)  # entries cut at block ends, runs of a phrase too
    sentences = _sentences(source)
    arrays = paraphrase_build.build_arrays(source, grams=_grams(sentences))
    table = ParaphraseTable(arrays)
    entries = range(len(table.para_offsets) - 1)
    usable = _usable(source, sentences)
    assert len(entries) == len(usable) > 40 and len(usable) < 20_000 // 2  # nothing else kept
    whole = ParaphraseTable(paraphrase_build.build_arrays(source))
    for sentence in sentences:
        assert _found(table, sentence, sentences) == _found(whole, sentence, sentences), sentence
    assert sum(len(_found(table, s, sentences)) for s in sentences) > 40


def test_a_table_of_words_is_kept_and_grown_for_new_words(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    source = _sample_table(tmp_path, 3_000)
    first, served = paraphrase.table_of_words(frozenset({"two", "spaces", "again", "two spaces"}), source)
    assert served == {"two", "spaces", "again", "two spaces"} and "building a paraphrase table" in capsys.readouterr().err
    assert first.word_id("again") >= 0  # "two spaces" -> "again"
    again, served = paraphrase.table_of_words(frozenset({"two", "two spaces"}), source)
    assert capsys.readouterr().err == "" and np.array_equal(again.para_ids, first.para_ids)  # served: read back
    grown, served = paraphrase.table_of_words(frozenset({"x", "y"}), source)
    assert served == {"two", "spaces", "again", "two spaces", "x", "y"} and "building" in capsys.readouterr().err
    assert [p.name for p in io.cache_folder().glob("meteor-paraphrase-*")] == [p.name for p in
                                                                                io.cache_folder().glob("*-words-*")]
    assert len(list(io.cache_folder().glob("meteor-paraphrase-*"))) == 1 and grown.word_id("x") >= 0
    assert paraphrase.kept_table(source) is None  # the whole table is not built by these


@pytest.mark.slow  # one pass over the installed 62 MB table (about 5 CPU s), and the whole table
def test_a_meteor_of_tables_of_words_gives_the_whole_tables_statistics(tmp_path, monkeypatch):
    from pregen_jax.postgen.meteor.python import PythonMeteor
    from tests.meteor_oracle import sets
    _installed_table()
    segments = (sets.where_image2("merge_2")[:300] + sets.flickr8k_leave_one_out()[::100]
                + [s for c in ("neg_subj", "near_syms") for s in sets.mutt(c, 20)[::20]] + sets.hard_strings())
    half = len(segments) // 2
    gts = {k: refs for k, (refs, _, _) in enumerate(segments)}
    res = {k: [cand] for k, (_, cand, _) in enumerate(segments)}
    whole = PythonMeteor()
    expected = whole.stats(gts, res)
    monkeypatch.setattr(paraphrase, "kept_table", lambda source=None: None)  # as on a first run
    monkeypatch.setattr(paraphrase, "cache_folder", lambda: tmp_path)
    of_words = PythonMeteor(tables_of_words=True)
    first = of_words.stats({k: gts[k] for k in range(half)}, {k: res[k] for k in range(half)})
    assert np.array_equal(first, expected[:half]) and of_words._words  # a table of the first half's words
    assert np.array_equal(of_words.stats(gts, res), expected)  # grown for the second half's
    assert len(list(tmp_path.glob("meteor-paraphrase-*-words-*"))) == 1


def test_a_call_of_many_sentences_builds_and_keeps_the_whole_table(tmp_path, monkeypatch, capsys):
    from pregen_jax.postgen.meteor import python
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    source = _sample_table(tmp_path, 3_000)
    monkeypatch.setattr(paraphrase, "paraphrase_path", lambda: source)
    monkeypatch.setattr(python, "WHOLE_TABLE_SENTENCES", 4)
    paraphrase.table.cache_clear()
    try:
        used = []
        meteor = python.PythonMeteor(tables_of_words=True)
        meteor._use = used.append  # load()'s state on a first run: a table of no word yet
        meteor._words = frozenset()
        meteor._serve_words([(("two", "spaces"), [("again",)])])  # 2 sentences: a table of their words
        assert meteor._words == {"two", "spaces", "again", "two spaces"} and paraphrase.kept_table(source) is None
        capsys.readouterr()
        meteor._serve_words([(("x",), [("y", "z"), ("two",), ("a",)])])  # 4: the whole table, kept
        said = capsys.readouterr().err  # why this run builds it, then the build's own line
        assert "4 sentences in one call" in said and "building the whole paraphrase table" in said
        assert "5.3 M entries" in said
        assert meteor._words is None and len(used[-1].keys) == len(paraphrase.table(source).keys) > 500 > len(used[0].keys)
        assert [p.name for p in io.cache_folder().glob("meteor-paraphrase-*")] == [paraphrase._name(source)]
        assert paraphrase.kept_table(source) is not None  # a later run's load() uses it, no words checked
    finally:
        paraphrase.table.cache_clear()


def test_the_api_reads_the_table_of_words_evaluate_kept_and_else_builds_the_whole_one(tmp_path, monkeypatch, capsys):
    """The in-process METEOR (``postgen.score``) after ``evaluate``: where the table of words evaluate's
    process kept serves its sentences, it is read (no build); a call with other words builds the whole
    table, saying why, which evaluate's process then loads (whichever runs first builds what the
    other needs)."""
    from pregen_jax.postgen.meteor import python
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    source = _sample_table(tmp_path, 3_000)
    monkeypatch.setattr(paraphrase, "paraphrase_path", lambda: source)
    paraphrase.table.cache_clear()
    try:
        paraphrase.table_of_words(frozenset({"two", "spaces", "again", "two spaces"}))  # evaluate's process
        assert paraphrase.words_kept() and paraphrase.kept_table() is None
        capsys.readouterr()
        used = []
        api = python.PythonMeteor()
        monkeypatch.setattr(python, "table", lambda: pytest.fail("load() built the whole table"))
        monkeypatch.setattr(python, "Analyzer", lambda synonyms, table: used.append(table))
        monkeypatch.setattr(python, "Packer", lambda analyzer: "packer")
        monkeypatch.setattr(python, "synonyms", lambda: None)
        monkeypatch.setattr(api, "_compiled_ready", lambda: None)
        api.load()
        assert api._words == frozenset() and len(used[-1].keys) == 0  # waits for the sentences
        assert "paraphrase" not in capsys.readouterr().err  # (numba's "compiling" line aside)
        api._serve_words([(("two", "spaces"), [("again",)])])  # served by evaluate's table: read, not built
        assert capsys.readouterr().err == "" and api._words == {"two", "spaces", "again", "two spaces"}
        assert used[-1].word_id("again") >= 0 and paraphrase.kept_table() is None
        monkeypatch.setattr(python, "table", paraphrase.table)
        api._serve_words([(("x",), [("y", "z")])])  # other words: the whole table, built and kept
        said = capsys.readouterr().err
        assert "lacks words of these sentences: building the whole paraphrase table" in said
        assert api._words is None and len(used[-1].keys) == len(paraphrase.table().keys) > 500
        assert paraphrase.kept_table() is not None and not paraphrase.words_kept()  # evaluate loads it next
        evaluate_side = python.PythonMeteor(tables_of_words=True)
        monkeypatch.setattr(evaluate_side, "_compiled_ready", lambda: None)
        evaluate_side.load()
        assert evaluate_side._words is None  # the whole table, no words checked
    finally:
        paraphrase.table.cache_clear()
