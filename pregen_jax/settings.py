"""Typed settings: frozen dataclasses validated on construction (pydantic, strict).

Strict means no silent coercion: ``epochs = "1"`` or ``seed = "zero"`` is an error, not 1 or
a crash later. ``validation_message`` turns pydantic's report into the one-line error users see:
``search.toml: [training] epochs = 0: Input should be greater than or equal to 1``.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Annotated

import pydantic
import pydantic_core
from pydantic import ConfigDict, Field

settings = functools.partial(pydantic.dataclasses.dataclass, frozen=True,
                             config=ConfigDict(strict=True, extra="forbid", allow_inf_nan=False))
"""Decorator for a settings dataclass: frozen, strict types, unknown fields rejected, no inf or NaN."""

MAX_INT = 2**31 - 1  # counts and sizes become int32 arrays and shapes: a larger one would overflow, not run
PositiveInt = Annotated[int, Field(ge=1, le=MAX_INT)]
NonNegativeInt = Annotated[int, Field(ge=0, le=MAX_INT)]
PositiveFloat = Annotated[float, Field(gt=0)]
Probability = Annotated[float, Field(ge=0, lt=1)]
MAX_SEED = 2**32 - 1
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
"""A random seed: 0..2^32-1 (what every generator the package seeds accepts)."""

ValidationError = pydantic.ValidationError


@dataclasses.dataclass(frozen=True)
class PathKind:
    """Marks a settings field as a path (``Annotated[str, PathKind(...)]``), so that resolving and
    checking every path of a config is one loop (``path_fields``, ``map_paths``).

    kind: "file", "dir", or "module" (a tier module: a ``.py`` file is a path, anything else an
    importable module's name).
    """

    kind: str


FilePath = Annotated[str, PathKind("file")]
DirPath = Annotated[str, PathKind("dir")]
ModulePath = Annotated[str, PathKind("module")]


MISSING = frozenset({"missing", "missing_argument", "missing_keyword_only_argument", "missing_positional_only_argument"})
UNKNOWN = frozenset({"unexpected_keyword_argument", "unexpected_positional_argument", "extra_forbidden"})


def validation_message(err: pydantic.ValidationError, source: str, section: str = "") -> str:
    """The first problem of a validation error as ``source: [section] key = value: what is allowed``.

    Only the key, the value the user wrote and pydantic's short message reach the user: never
    pydantic's own objects (``ArgsKwargs(...)``, the whole section) or its links.
    """
    first = err.errors(include_url=False)[0]
    key = _key(first["loc"])
    where = f"[{section}] " if section else ""
    if first["type"] in UNKNOWN:
        return f"{source}: {where}unknown setting {str(first['loc'][-1]) if first['loc'] else '?'!r}"
    if first["type"] in MISSING:
        return f"{source}: {where}{key or 'a setting'} is required (no default)"
    message = " ".join(str(first["msg"]).split())
    for prefix in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    value = first.get("input")
    if not key or isinstance(value, (pydantic_core.ArgsKwargs, dict)) or dataclasses.is_dataclass(value):
        return f"{source}: {where}{key + ': ' if key else ''}{message}"  # a rule across fields names them
    return f"{source}: {where}{key} = {value!r}: {message}"


def _key(loc) -> str:
    """``("architectures", 0)`` -> ``architectures[0]``: the key as the user wrote it."""
    parts = [str(part) for part in loc if part != "__root__"]
    return "".join(f"[{part}]" if part.isdigit() else ("." if n else "") + part for n, part in enumerate(parts))


def build(cls, values, source: str, section: str = ""):
    """``cls(**values)`` with a one-line ``ValueError`` for anything wrong."""
    if not isinstance(values, dict):
        raise ValueError(f"{source}: {f'[{section}] ' if section else ''}must be a table of settings, got {values!r}")
    try:
        return cls(**values)
    except pydantic.ValidationError as err:
        raise ValueError(validation_message(err, source, section)) from None
    except (TypeError, ValueError) as err:
        raise ValueError(f"{source}: {f'[{section}] ' if section else ''}{' '.join(str(err).split())}") from None


def as_dict(obj) -> dict:
    """A settings dataclass as plain data (tuples become lists), for TOML and cache keys."""
    def plain(value):
        if dataclasses.is_dataclass(value):
            return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        return value
    return plain(obj)


def _path_kinds(cls) -> dict[str, tuple[PathKind | None, bool, bool]]:
    """field -> (its PathKind or None, holds a list, holds settings dataclasses)."""
    import typing
    found = {}
    for name, hint in typing.get_type_hints(cls, include_extras=True).items():
        listed = typing.get_origin(hint) is list
        inner = typing.get_args(hint)[0] if listed else hint
        kind = next((m for m in getattr(inner, "__metadata__", ()) if isinstance(m, PathKind)), None)
        found[name] = (kind, listed, dataclasses.is_dataclass(inner))
    return found


def path_fields(obj, where: str = ""):
    """Every path a settings object names, as (section, key, value, kind), nested sections and lists
    of sections included (empty values too: a path left out is the caller's business).

    >>> @settings
    ... class Files:
    ...     corpus: FilePath = "c.json"
    ...     models: list[FilePath] = dataclasses.field(default_factory=lambda: ["a.msgpack"])
    ...     name: str = "x"
    >>> list(path_fields(Files()))
    [('', 'corpus', 'c.json', 'file'), ('', 'models', 'a.msgpack', 'file')]
    """
    for name, (kind, listed, nested) in _path_kinds(type(obj)).items():
        value = getattr(obj, name)
        if nested:
            for k, item in enumerate(value if listed else [value]):
                yield from path_fields(item, f"{name} {k + 1}" if listed else name)
        elif kind is not None:
            for item in (value if listed else [value]):
                yield where, name, item, kind.kind


def map_paths(obj, fn):
    """``obj`` with every path field's value replaced by ``fn(value, kind)`` (nested sections and
    lists included): one loop for resolving a config's relative paths."""
    changes = {}
    for name, (kind, listed, nested) in _path_kinds(type(obj)).items():
        value = getattr(obj, name)
        if nested:
            changes[name] = [map_paths(v, fn) for v in value] if listed else map_paths(value, fn)
        elif kind is not None:
            changes[name] = [fn(v, kind.kind) for v in value] if listed else fn(value, kind.kind)
    return dataclasses.replace(obj, **changes) if changes else obj
