"""Files: atomic writes, run folders published whole, strict text reading, and where data lives.

Readers (and a rerun after a crash) see either the old file or the whole new one, never a
truncated one; a run folder is filled in a staging folder and swapped in at the end, so it
always holds exactly one run's outputs. This is what makes a run folder safe to use as a cache.
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = PROJECT_ROOT.parent / "shared" / "data"
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: files written through a temporary get the usual permissions, not mkstemp's 0600
"""``../shared/data`` beside a source checkout: the real data the tests and experiments read."""


def shared_data(*parts) -> Path:
    """A path under ``../shared/data`` (it may not exist: callers say so or skip)."""
    return SHARED_DATA.joinpath(*parts)


# ------------------------------------------------------------------ the cache folder

CACHE_VERSION = 1
"""The cache's layout version: its folder is ``cache_root()/v<CACHE_VERSION>``. Raise it when a cached
file's format changes; the first run that makes the new folder removes the older ones."""
_LEGACY = re.compile(r"(v\d+|numba|\.?meteor-paraphrase-.*|\.?shapes-v.*|encoder-.*\.msgpack)")
"""What the package itself wrote directly into the cache root before it was versioned (removed with
old versions; nothing else in a folder named by ``$PREGEN_JAX_CACHE`` is touched)."""


def cache_root() -> Path:
    """``$PREGEN_JAX_CACHE``, else ``pregen-jax`` in the platform's user cache folder:
    ``$XDG_CACHE_HOME`` or ``~/.cache`` (Linux and other Unix), ``~/Library/Caches`` (macOS),
    ``%LOCALAPPDATA%`` (Windows)."""
    if os.environ.get("PREGEN_JAX_CACHE"):
        return Path(os.environ["PREGEN_JAX_CACHE"])
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "pregen-jax"
    if os.name == "nt":
        return Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "pregen-jax" / "Cache"
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "pregen-jax"


def cache_folder() -> Path | None:
    """The versioned cache folder (``cache_root()/v<CACHE_VERSION>``), made on first use (older
    versions then removed); ``None``, with one warning per process, where it cannot be written
    (callers then build what they need in memory)."""
    return _usable_cache_folder(cache_root() / f"v{CACHE_VERSION}")


@functools.cache
def _usable_cache_folder(folder: Path) -> Path | None:
    try:
        new = not folder.is_dir()
        folder.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError as err:
        warnings.warn(f"cache folder {folder} is not writable ({err.strerror or err}): what it would keep is built "
                      "for this run only (set PREGEN_JAX_CACHE to a writable folder to keep it)", stacklevel=3)
        return None
    if new:
        remove_old_caches(folder)
    return folder


def remove_old_caches(folder: Path) -> list[Path]:
    """Remove, beside the cache folder ``folder``, other versions' folders and the unversioned
    layout's entries (``_LEGACY``); the paths removed."""
    removed = []
    for entry in folder.parent.iterdir():
        if entry != folder and _LEGACY.fullmatch(entry.name):
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
            removed.append(entry)
    return removed


def default_cache_dir() -> Path:
    """Where built-in datasets and image encoders are cached: ``cache_folder()``, else (not writable)
    a temporary folder for this process, removed when it exits."""
    return cache_folder() or _temporary_cache()


@functools.cache
def _temporary_cache() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="pregen-jax-cache-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


# ------------------------------------------------------------------ atomic files


@contextlib.contextmanager
def atomic_path(path):
    """Yield a temporary path beside ``path``; on success it replaces ``path``, on error it is removed.

    The temporary name keeps ``path``'s suffix, so writers that add one (``np.save``,
    ``np.savez``) write exactly the yielded path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        yield Path(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_bytes(data: bytes, path) -> None:
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text(text: str, path) -> None:
    write_bytes(text.encode("utf-8"), path)


def write_tsv(frame, path, na_rep: str = "") -> None:
    """A pandas DataFrame as TSV (10 significant digits), written atomically; NaN cells as ``na_rep``."""
    write_text(frame.to_csv(sep="\t", index=False, float_format="%.10g", na_rep=na_rep), path)


# ------------------------------------------------------------------ reading


def read_text(path, what: str = "file") -> str:
    """UTF-8 text of ``path`` (a leading byte-order mark dropped); ``ValueError`` naming the file
    when it is missing or not UTF-8."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: {what} not found")
    data = path.read_bytes()
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise ValueError(f"{path}: not UTF-8 text (byte {err.start}, line {line}: {data[err.start:err.start + 1]!r}); "
                         "save it as UTF-8") from None


def read_json(path, what: str = "file"):
    """The JSON value of ``path`` (``read_text``'s checks; one line naming the file and the line
    where it is not JSON)."""
    import json
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}: {err.msg})") from None


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` split on ``\\n`` and ``\\r\\n`` only.

    ``str.splitlines`` also breaks at U+2028, U+0085, form feeds and other characters that
    may sit inside a caption; splitting there would shift every later line by one.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def read_lines(path, what: str = "file") -> list[str]:
    """The lines of a UTF-8 text file (see ``read_text`` and ``split_lines``)."""
    return split_lines(read_text(path, what))


def load_npz(path, what: str = ".npz file", names: tuple[str, ...] | None = None) -> dict:
    """Every array of an ``.npz`` archive, read in full, as ``{name: array}``.

    A missing or damaged file (a bad CRC, a truncated archive), object arrays (which would
    need pickle) and missing ``names`` each raise one ``ValueError`` naming the file.
    """
    import zipfile
    import zlib

    import numpy as np
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: {what} not found")
    try:
        with open(path, "rb") as fid:  # ours to close, whatever np.load raises (a damaged archive left it open)
            npz = np.load(fid, allow_pickle=False)
            if not isinstance(npz, np.lib.npyio.NpzFile):
                raise ValueError(f"{path}: expected an .npz archive, found a single array")
            with npz:
                arrays = {name: npz[name] for name in npz.files}
    except ValueError as err:
        if str(err).startswith(str(path)):
            raise
        if "Object arrays" in str(err):
            raise ValueError(f"{path}: holds object arrays (Python objects, not numbers); save numeric arrays"
                             ) from None
        raise ValueError(f"{path}: not a readable .npz file ({' '.join(str(err).split())})") from None
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, KeyError, AttributeError) as err:
        raise ValueError(f"{path}: not a readable .npz file ({type(err).__name__}: {' '.join(str(err).split())}); "
                         "it may be damaged: write it again") from None
    if names is not None:
        missing = sorted(name for name in names if name not in arrays)
        if missing:
            raise ValueError(f"{path}: missing arrays {missing} (need {', '.join(names)})")
    for name, array in arrays.items():
        if array.dtype == object:
            raise ValueError(f"{path}: array {name!r} holds Python objects; save numeric arrays")
    return arrays


_UNSAFE_NAME = re.compile(r"[/\\\x00-\x1f\x7f]|\.\.|^\.|^$")


def check_name(name, where: str | None = None) -> str:
    """``name`` (an architecture, run, model or label from a config or file) if it can be part of a
    file name: no path separator (``/``, ``\\``), no ``..``, no control character, not starting
    with ``.``, at most 100 characters. A name never becomes a path outside ``--out`` or the cache."""
    if not isinstance(name, str) or _UNSAFE_NAME.search(name) or len(name) > 100:
        raise ValueError((f"{where} = {name!r}: " if where else "") + "a name becomes part of file names, so it may "
                         "hold no / or \\, no '..', no control characters, may not start with '.' and has at most "
                         "100 characters")
    return name


# ------------------------------------------------------------------ run folders


def file_digest(path) -> str:
    """Content hash of a file (16 hex digits), for cache keys."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def file_hash(path) -> str:
    """sha256 (hex) of a file (a jar, METEOR's paraphrase table, a scorer): worked out once while the
    file is unchanged, then remembered by this process and, in a note in the cache folder, by later
    ones. A note is believed only while the file's stat stamp is the same: device, inode, size and
    the modification and change times in nanoseconds (any write sets the change time, which no
    program can set back), as git's index does. Reading it back saves METEOR's process 45 ms a run
    (the 60 MB paraphrase table)."""
    path = os.path.abspath(path)
    info = os.stat(path)
    return _file_hash(path, f"{info.st_dev} {info.st_ino} {info.st_size} {info.st_mtime_ns} {info.st_ctime_ns}")


@functools.lru_cache(maxsize=64)
def _file_hash(path: str, stamp: str) -> str:
    folder = cache_root() / f"v{CACHE_VERSION}"  # used only where it is made already: no warning, no folder
    note = folder / "file-hashes" / f"{hashlib.sha256(path.encode()).hexdigest()[:32]}.txt"
    try:
        noted_stamp, noted = note.read_text(encoding="utf-8").rsplit(" ", 1)
        if noted_stamp == stamp and len(noted) == 64:
            return noted
    except (OSError, ValueError):
        pass
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    if folder.is_dir():
        try:
            write_text(f"{stamp} {digest.hexdigest()}", note)
        except OSError:  # not writable: hashed again next run
            pass
    return digest.hexdigest()


OUT_MARKER = ".pregen-jax-output"  # in every folder pregen-jax writes as --out: only such folders are replaced


def check_out_folder(out) -> Path:
    """Fail early, before any work, when ``out`` cannot become a run folder.

    A folder that holds anything but pregen-jax's own outputs is refused: publishing replaces
    a run folder's entries, and ``--out .`` must never empty a project or a home folder.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: is a file, not a folder")
    if out.is_dir():
        foreign = [entry.name for entry in out.iterdir()
                   if entry.name != OUT_MARKER and not entry.name.startswith((".staging-", ".old-"))]
        # The marker is looked for after the listing: another process of the same run may be
        # claiming the folder now, and it writes the marker before anything else.
        if foreign and not (out / OUT_MARKER).is_file():
            raise ValueError(f"--out {out}: the folder holds files pregen-jax did not write ({foreign[0]!r}, ...), "
                             "which would be replaced; choose a new or empty folder")
    ancestor = out
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"--out {out}: {ancestor} is a file, so the folder cannot be created")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out}: {ancestor} is not writable")
    return out


def claim_out_folder(out) -> Path:
    """``check_out_folder``, then create ``out`` and mark it as pregen-jax's, before writing into it."""
    out = check_out_folder(out)
    out.mkdir(parents=True, exist_ok=True)
    if not (out / OUT_MARKER).is_file():
        (out / OUT_MARKER).write_text("This folder is an output of pregen-jax; a rerun replaces its files.\n")
    return out


DISPOSABLE = (("cache", "xla"),)  # what a run writes before any work: XLA's compiled programs


@contextlib.contextmanager
def claimed_out_folder(out):
    """``claim_out_folder``, undone on error when this claim created ``out`` and nothing but the
    marker, staging folders and compiled programs went in: a rejected input, or a run that fails
    however (a full disk while writing the marker or the outputs, a signal), leaves no folder behind."""
    out = Path(out)
    created = out  # the outermost folder this claim creates
    while not created.parent.exists():
        created = created.parent
    fresh = not out.exists()
    try:
        claim_out_folder(out)
        yield out
    except BaseException:
        if fresh and out.is_dir() and _holds_only_disposables(out):
            shutil.rmtree(created, ignore_errors=True)
        raise


def _holds_only_disposables(out: Path) -> bool:
    for path in out.rglob("*"):
        parts = path.relative_to(out).parts
        if path.is_dir() or parts == (OUT_MARKER,) or any(parts[:len(d)] == d for d in DISPOSABLE):
            continue
        return False
    return True


@contextlib.contextmanager
def staged_folder(out, keep: tuple[str, ...] = ()):
    """Yield an empty staging folder; on success its entries replace ``out``'s.

    Every entry of ``out`` except those named in ``keep`` (a cache, say) is replaced, so
    outputs of an earlier run that this one does not write (a post-gen metric dropped from
    the config, say) do not linger. On error ``out`` is left as it was: removed, staging and
    all, where this call created it (``claimed_out_folder``).
    """
    with claimed_out_folder(out) as out:
        staging = Path(tempfile.mkdtemp(dir=out, prefix=".staging-"))
        try:
            yield staging
            trash = Path(tempfile.mkdtemp(dir=out, prefix=".old-"))
            for entry in list(out.iterdir()):
                if (entry.name in keep or entry.name == OUT_MARKER or entry in (staging, trash)
                        or entry.name.startswith((".staging-", ".old-"))):
                    continue
                entry.rename(trash / entry.name)
            for entry in list(staging.iterdir()):
                entry.rename(out / entry.name)
            shutil.rmtree(trash, ignore_errors=True)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
