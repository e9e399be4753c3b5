"""``Registry``: named things filled by a decorator where each thing is defined.

The tier functions (``tiers``), the caption-generator architectures (``captioning``) and the
post-gen metrics keep their entries in one of these: a read-only mapping from name to entry, in
registration order, whose ``get`` names what exists when a name is unknown, and whose ``add``
refuses a taken name unless told to overwrite. What an entry is, and what is checked before it
is added (a tier function is traced, an architecture's sizes are checked), is the owner's.

>>> colours = Registry("colour")
>>> @colours.register("red", hex="#f00")
... def red(): ...
>>> colours.names(), colours.get("red").facts["hex"]
(('red',), '#f00')
>>> colours.get("blue")
Traceback (most recent call last):
ValueError: unknown colour 'blue'; registered: red
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

Entry = TypeVar("Entry")


@dataclasses.dataclass(frozen=True)
class Registered:
    """What ``Registry.register`` keeps when no ``make`` is given: the name, the object, the facts."""

    name: str
    obj: Any
    facts: dict = dataclasses.field(default_factory=dict)


def _registered(name: str, obj: Any, **facts) -> Registered:
    return Registered(name, obj, facts)


class Registry(Generic[Entry]):
    """Named entries of one kind (``kind``: how messages call one, e.g. "architecture").

    ``make(name, obj, **facts) -> entry`` builds the entry the ``register`` decorator stores
    (default: ``Registered``). It reads like a dict (``in``, ``[name]``, iteration, ``items``,
    ``values``, ``len``) but changes only through ``add``, ``remove`` and ``register``.
    """

    def __init__(self, kind: str, make: Callable[..., Entry] = _registered):
        self.kind = kind
        self._make = make
        self._entries: dict[str, Entry] = {}

    def __getitem__(self, name: str) -> Entry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def items(self):
        return self._entries.items()

    def values(self):
        return self._entries.values()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}: {', '.join(self._entries)})"

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order."""
        return tuple(self._entries)

    def get(self, name: str) -> Entry:
        """The entry ``name``; ``ValueError`` naming the registered ones when there is none."""
        if isinstance(name, str) and name in self._entries:
            return self._entries[name]
        raise ValueError(f"unknown {self.kind} {name!r}; registered: {', '.join(self._entries) or 'none'}")

    def add(self, name: str, entry: Entry, *, overwrite: bool = False) -> Entry:
        """Register ``entry`` as ``name``; ``ValueError`` if the name is taken (unless ``overwrite``)."""
        self.check_free(name, overwrite)
        self._entries[name] = entry
        return entry

    def check_free(self, name: str, overwrite: bool = False) -> None:
        """``ValueError`` if ``name`` is taken (and not to be overwritten): what ``add`` checks, for an
        owner that adds one thing to several registries only when every name is free."""
        if name in self._entries and not overwrite:
            article = "an" if self.kind[:1].lower() in "aeiou" else "a"
            raise ValueError(f"{article} {self.kind} named {name!r} is already registered "
                             "(choose another name, or pass overwrite=True)")

    def remove(self, name: str) -> None:
        """Forget ``name`` (a user module imported again registers its new version)."""
        del self._entries[name]

    def register(self, name: str | None = None, *, overwrite: bool = False, **facts) -> Callable:
        """Decorator: register the decorated object as ``make(name, obj, **facts)`` under ``name``
        (default: its ``__name__``); returns the object unchanged."""
        def decorate(obj):
            key = name or obj.__name__
            self.add(key, self._make(key, obj, **facts), overwrite=overwrite)
            return obj
        return decorate
