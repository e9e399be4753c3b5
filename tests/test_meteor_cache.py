"""METEOR's first run: the paraphrase table built by streaming equals the old whole-file build,
the cache folder is versioned and may be read-only, numba compiles on first use only."""
import bisect
import gzip
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from pregen_jax import io
from pregen_jax.postgen.meteor import paraphrase, paraphrase_build
from pregen_jax.postgen.meteor.paraphrase import FILES, ParaphraseTable, table
from tests.conftest import ROOT


def reference_arrays(source: Path) -> dict[str, np.ndarray]:
    """The table as the package compiled it before it streamed (the whole gzip in memory, words as
    Python lists): the oracle for the streamed build."""
    with gzip.open(source, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    vocab: dict[bytes, int] = {}
    refs = [[vocab.setdefault(w, len(vocab)) for w in line.split(b" ") if w] for line in lines[1::3]]
    paras = [[vocab.setdefault(w, len(vocab)) for w in line.split(b" ") if w] for line in lines[2::3]]
    words = sorted(vocab)
    rank = {vocab[w]: r for r, w in enumerate(words)}
    refs = [[rank[w] for w in p] for p in refs]
    paras = [[rank[w] for w in p] for p in paras]
    keys = [paraphrase.phrase_key(p) for p in refs]
    order = sorted(range(len(refs)), key=lambda k: keys[k])  # stable: a phrase's entries in table order
    first = [k for k in range(len(order)) if k == 0 or keys[order[k]] != keys[order[k - 1]]]
    for k in range(len(order)):  # no two phrases share a key
        assert refs[order[k]] == refs[order[first[bisect.bisect_right(first, k) - 1]]]

    def csr(rows):
        offsets = np.zeros(len(rows) + 1, np.int64)
        offsets[1:] = np.cumsum([len(r) for r in rows])
        return offsets, np.array([w for r in rows for w in r], np.int32)
    phrase_offsets, phrase_ids = csr([refs[order[f]] for f in first])
    para_offsets, para_ids = csr([paras[k] for k in order])
    prefixes = sorted({paraphrase.phrase_key(p[:n]) for p in refs for n in range(1, len(p) + 1)})
    return {"vocab": np.frombuffer(b"".join(words), np.uint8),
            "vocab_offsets": np.r_[0, np.cumsum([len(w) for w in words])].astype(np.int64),
            "keys": np.array([keys[order[f]] for f in first], np.uint64), "phrase_offsets": phrase_offsets,
            "phrase_ids": phrase_ids, "entry_offsets": np.array(first + [len(order)], np.int64),
            "para_offsets": para_offsets, "para_ids": para_ids, "prefix_keys": np.array(prefixes, np.uint64)}


def _installed_table() -> Path:
    from pregen_jax.postgen.meteor.resources import paraphrase_path
    path = paraphrase_path()
    if not path.is_file():
        pytest.skip("pycocoevalcap's paraphrase-en.gz is not installed")
    return path


def _sample_table(tmp_path: Path, entries: int) -> Path:
    """The first ``entries`` entries of the installed table, then entries with odd spacing, bytes and
    repeats; no newline at the end."""
    with gzip.open(_installed_table(), "rb") as f:
        head = b"".join(f.readline() for _ in range(3 * entries))
    odd = (b"0.5\n  two  spaces \nboth  ends \n0.1\nx\n\n0.2\ncaf\xc3\xa9 \xff\nnaive\n0.3\na\tb\nc\rd\n"
           b"0.4\ntwo spaces\nagain\n0.6\nx\ny z")
    path = tmp_path / "sample.gz"
    path.write_bytes(gzip.compress(head + odd))
    return path


def test_the_streamed_build_equals_the_whole_file_build(tmp_path, monkeypatch):
    source = _sample_table(tmp_path, 20_000)
    monkeypatch.setattr(paraphrase_build, "BLOCK", 4096)  # many blocks: lines cut at every block's end
    monkeypatch.setattr(paraphrase_build, "ROWS", 1000)
    seen = []
    built = paraphrase_build.build_arrays(source, lambda done, total: seen.append((done, total)))
    expected = reference_arrays(source)
    assert list(built) == list(expected)
    for name in expected:
        assert built[name].dtype == expected[name].dtype and np.array_equal(built[name], expected[name]), name
    assert seen[-1][0] == seen[-1][1] == source.stat().st_size


def test_the_built_table_reads_the_same_from_its_folder_and_from_memory(tmp_path):
    source = _sample_table(tmp_path, 3_000)
    arrays = paraphrase_build.build_arrays(source)
    paraphrase.write_arrays(arrays, tmp_path / "table")
    assert sorted(p.name for p in (tmp_path / "table").iterdir()) == sorted(FILES)
    mapped, memory = ParaphraseTable.open(tmp_path / "table"), ParaphraseTable(arrays)
    for word in ("two", "spaces", "café", "x", "y", "nowhere", "a\tb"):
        assert mapped.word_id(word) == memory.word_id(word)
    ids = tuple(memory.word_id(w) for w in ("x", "two", "spaces", "again", "y", "z"))
    assert np.array_equal(mapped.span_rows(ids), memory.span_rows(ids)) and len(memory.span_rows(ids))


def test_the_cache_folder_is_versioned_and_old_versions_are_removed(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    for name in ("v0", "numba", "meteor-paraphrase-v2-0123", ".meteor-paraphrase-x", "shapes-v1-seed0-6-1-1-r5"):
        (root / name).mkdir(parents=True)
    (root / "encoder-abc-10-e4-s0.msgpack").write_bytes(b"")
    (root / "mine.txt").write_text("not the package's")
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(root))
    folder = io.cache_folder()
    assert folder == root / f"v{io.CACHE_VERSION}" and folder.is_dir()
    assert sorted(p.name for p in root.iterdir()) == sorted([folder.name, "mine.txt"])
    assert io.default_cache_dir() == folder


def test_the_platform_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("PREGEN_JAX_CACHE", raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert io.cache_root() == tmp_path / "xdg" / "pregen-jax"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: only absolute paths count
    assert io.cache_root() == Path.home() / ".cache" / "pregen-jax"


def test_an_unwritable_cache_folder_warns_once_and_the_table_is_built_in_memory(tmp_path, monkeypatch, capsys):
    (tmp_path / "file").write_text("")  # a folder below a file cannot be made (root can write read-only folders)
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "file" / "cache"))
    source = _sample_table(tmp_path, 300)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert io.cache_folder() is None and io.cache_folder() is None
        built = table.__wrapped__(source)
        folder = io.default_cache_dir()  # datasets get a temporary folder instead
    assert len(caught) == 1 and "not writable" in str(caught[0].message)
    assert not isinstance(built.keys, np.memmap) and built.word_id("spaces") >= 0
    assert folder.is_dir() and str(folder).startswith(str(Path(__import__("tempfile").gettempdir())))
    err = capsys.readouterr().err
    assert "METEOR: building the paraphrase table" in err and "memory" in err


def test_a_built_table_is_kept_and_read_back(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    source = _sample_table(tmp_path, 300)
    first = table.__wrapped__(source)
    assert "METEOR: building the paraphrase table" in capsys.readouterr().err
    again = table.__wrapped__(source)
    assert capsys.readouterr().err == ""  # read from the folder: nothing built, nothing said
    folders = list(io.cache_folder().glob("meteor-paraphrase-*"))
    assert len(folders) == 1 and np.array_equal(again.para_ids, first.para_ids)


def test_importing_metrics_neither_imports_numba_nor_writes_the_cache(tmp_path):
    code = ("import sys, pregen_jax.postgen.meteor.python, pregen_jax.postgen.meteor.paraphrase; "
            "print('numba' in sys.modules)")
    env = {"PREGEN_JAX_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False" and not (tmp_path / "cache").exists()


@pytest.mark.slow  # builds the table and compiles the search in memory (about a minute on 2 cores)
def test_evaluate_with_an_unwritable_cache_folder_scores_with_one_warning(tmp_path):
    import json
    (tmp_path / "file").write_text("")
    refs = {"images": [{"id": 1}, {"id": 2}], "annotations": [
        {"image_id": 1, "id": 1, "caption": "a man rides a horse"}, {"image_id": 2, "id": 2, "caption": "two dogs play"}]}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    (tmp_path / "res.json").write_text(json.dumps([{"image_id": 1, "caption": "a man is riding a horse"},
                                                   {"image_id": 2, "caption": "dogs playing"}]))
    env = {"PREGEN_JAX_CACHE": str(tmp_path / "file" / "cache"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pregen_jax.cli", "evaluate", "--references", str(tmp_path / "refs.json"),
                           "--captions", str(tmp_path / "res.json"), "--metrics", "Bleu_4,METEOR"],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "METEOR" in done.stdout
    warned = [line for line in done.stderr.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and "not writable" in warned[0], done.stderr


def test_the_synonyms_are_kept_and_read_back_equal(tmp_path, monkeypatch):
    from pregen_jax.postgen.meteor import resources
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path))
    resources.synonyms.cache_clear()
    try:
        built = resources.synonyms()
        [kept] = (tmp_path / f"v{io.CACHE_VERSION}").glob("meteor-synonyms-*.marshal")
        resources.synonyms.cache_clear()
        assert resources.synonyms() == built  # read back from the cache folder
        kept.write_bytes(b"damaged")
        resources.synonyms.cache_clear()
        assert resources.synonyms() == built and kept.read_bytes() != b"damaged"  # built again, kept again
    finally:
        resources.synonyms.cache_clear()
