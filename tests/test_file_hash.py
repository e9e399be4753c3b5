"""``io.file_hash``: a file's sha256, remembered across runs in the cache folder and believed only
while the file's stat stamp (device, inode, size, modification and change times) is unchanged."""
import hashlib
import os

from pregen_jax import io


def _fresh(path) -> str:
    io._file_hash.cache_clear()  # as a new process would
    return io.file_hash(path)


def test_a_note_is_reused_while_the_file_is_unchanged_and_not_after(tmp_path, monkeypatch):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / f"v{io.CACHE_VERSION}").mkdir(parents=True)
    data = tmp_path / "table.gz"
    data.write_bytes(b"first content")
    assert _fresh(data) == hashlib.sha256(b"first content").hexdigest()
    [note] = (tmp_path / "cache" / f"v{io.CACHE_VERSION}" / "file-hashes").iterdir()
    stamp = note.read_text().rsplit(" ", 1)[0]
    note.write_text(f"{stamp} {'a' * 64}")  # what a later run reads back instead of hashing
    assert _fresh(data) == "a" * 64
    data.write_bytes(b"other content")  # same size; its change time moves whatever the modification time
    info = os.stat(data)
    os.utime(data, ns=(info.st_atime_ns, int(stamp.split()[3])))  # even with the old modification time
    assert _fresh(data) == hashlib.sha256(b"other content").hexdigest()


def test_no_cache_folder_no_note(tmp_path, monkeypatch):
    monkeypatch.setenv("PREGEN_JAX_CACHE", str(tmp_path / "cache"))  # not made: file_hash makes none
    data = tmp_path / "x.jar"
    data.write_bytes(b"jar")
    assert _fresh(data) == hashlib.sha256(b"jar").hexdigest()
    assert not (tmp_path / "cache").exists()
