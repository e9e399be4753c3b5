"""Registries of tier functions, filled by the same decorators users call.

A tier function is a pure jax.numpy function with one fixed signature per tier; the shapes
below use ``...`` for leading batch axes that the sweep adds (filters, strata, metrics).

  tier 1, filter:      fn(probs: f[..., T], ranks: i32[..., T], mask: bool[..., T]) -> bool[..., T]
                       (the positions kept; the sweep also ANDs the result with ``mask``)
  tier 2, caption:     fn(probs: f[..., T], keep: bool[..., T], mask: bool[..., T]) -> f[...]
                       (``mask`` is the reference's real positions, for lengths)
  tier 3/4, aggregator: fn(values: f[..., N], mask: bool[..., N]) -> f[...]
                       (reduce the last axis over the masked entries; at least one is True;
                       ``values`` and ``mask`` always arrive with the same shape, and
                       ``values`` sorted ascending along the last axis, NaN last: the sweep
                       sorts each column once, for all strata, so an order statistic such
                       as the median costs O(N) per stratum instead of a sort; an aggregator
                       registered with ``unsorted=`` also has a form for values in any
                       order, and when every tier-4 aggregator has one the sweep sorts nothing)

Tier 3 aggregates a reference's caption scores into an image score, tier 4 the image scores
of a stratum into a dataset score; one aggregator may serve both tiers. The tier-3 entry
``join`` is structural (it does no reduction) and is handled by the sweep itself.
"""
from __future__ import annotations

import dataclasses
import hashlib
import inspect
import re
import sys
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp

from ..registry import Registry
from ._parts import Parts

TIER_NAMES = {1: "filter", 2: "caption score", 3: "image aggregator", 4: "dataset aggregator"}
JOIN = "join"

_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")


@dataclasses.dataclass(frozen=True)
class TierFn:
    """One registered tier function: its tier (1-4), its name and the function."""

    tier: int
    name: str
    fn: Callable | None  # None only for the structural tier-3 ``join``
    doc: str = ""
    reference: Callable | None = None  # plain Python over one list of values (see ``check``)
    module_digest: str = ""  # hash of the defining module's file when registered (constants change scores too)
    # Aggregators only: the same reduction for values in any order along the last axis (None:
    # it needs them sorted). When every tier-4 aggregator of a space has one, the segment sweep
    # hands them unsorted rows and sorts nothing.
    unsorted: Callable | None = None
    # Aggregators only: the same reduction as statistics of pieces of a row combined per union
    # of pieces (``Parts``); the segment sweep then reads each image once for all partitions.
    parts: Parts | None = None

    def renamed(self, name: str) -> TierFn:
        """The same function under another name (how COMPAT_2018 calls its filter ``filter0``)."""
        _check_name(name)
        return dataclasses.replace(self, name=name)

    @property
    def is_join(self) -> bool:
        return self.tier == 3 and self.fn is None


REGISTRIES: dict[int, Registry[TierFn]] = {tier: Registry(f"tier-{tier} {what}") for tier, what in TIER_NAMES.items()}


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"tier function name {name!r} must be lower-case letters and digits "
                         "(words joined by single underscores), starting with a letter")


def _probe(tier: int, name: str, fn: Callable) -> None:
    """Trace ``fn`` on small abstract inputs and check the output's shape and dtype."""
    batch, length = (2, 3), 4
    f32 = jax.ShapeDtypeStruct((*batch, length), jnp.float32)
    i32 = jax.ShapeDtypeStruct((*batch, length), jnp.int32)
    bool_ = jax.ShapeDtypeStruct((*batch, length), jnp.bool_)
    if tier == 1:
        args, want_shape = (f32, i32, bool_), (*batch, length)
    elif tier == 2:
        args, want_shape = (f32, bool_, bool_), batch
    else:
        args, want_shape = (f32, bool_), batch
    label = f"tier-{tier} {TIER_NAMES[tier]} {name!r}"
    try:
        out = jax.eval_shape(fn, *args)
    except Exception as err:  # report any tracing failure as a registration error
        raise ValueError(f"{label} failed on inputs of shape {(*batch, length)}: {type(err).__name__}: {err}") from err
    if not hasattr(out, "shape"):
        raise ValueError(f"{label} must return one array, got {type(out).__name__}")
    if tuple(out.shape) != want_shape:
        raise ValueError(f"{label} returned shape {tuple(out.shape)} for inputs of shape {(*batch, length)}; "
                         f"expected {want_shape}" + (" (a filter keeps the position axis)" if tier == 1
                                                     else " (it must reduce the last axis)"))
    if tier == 1 and out.dtype != jnp.bool_:
        raise ValueError(f"{label} must return bool, got {out.dtype}")
    if tier > 1 and not (jnp.issubdtype(out.dtype, jnp.floating) or jnp.issubdtype(out.dtype, jnp.integer)):
        raise ValueError(f"{label} must return numbers, got {out.dtype}")


def register(tier: int | tuple[int, ...], name: str | None = None, *, reference: Callable | None = None,
             overwrite: bool = False, unsorted: Callable | bool | None = None, parts: Parts | None = None):
    """Decorator: register ``fn`` as a tier function (tier 1-4, or a tuple such as (3, 4)).

    The function is traced once on small inputs to check its signature and output shape,
    so a mistake is reported here rather than deep inside a sweep. Registering a name that
    is already taken in that tier raises ``ValueError`` unless ``overwrite=True``.
    ``tiers.check(name)`` runs the full checks (scattered masks, zeros and +inf, batch axes,
    jit, and equality with ``reference``), as the test suite does for every registered function.

    ``reference`` (optional) is a plain-Python version over one reference or one list:
    filter ``(probs: list[float], ranks: list[int]) -> list[bool]``; caption score
    ``(probs: list[float], keep: list[bool]) -> float`` (the reference's real positions);
    aggregator ``(values: list[float]) -> float`` (the masked values, sorted ascending).

    ``unsorted`` (aggregators only, optional): ``True`` when ``fn`` itself needs no sorted
    input (a sum, a maximum), or a function of the same signature that gives ``fn``'s result
    for values in any order (a median by selection). When every tier-4 aggregator of a space
    has one, the segment sweep sorts nothing; ``check`` compares it with ``fn`` on shuffled rows.

    ``parts`` (aggregators only, optional): a ``Parts`` giving the reduction as statistics of
    pieces of a row and how to combine them per union of pieces (a sum: partial sums, added);
    the segment sweep then reduces each run of images once for all partitions; ``check``
    compares it with ``fn`` on rows cut into random pieces.

    >>> @register(1, "top2prefix")
    ... def top2prefix(probs, ranks, mask):
    ...     return jnp.cumprod(ranks < 2, axis=-1).astype(bool) & mask
    >>> get(1, "top2prefix").tier, "top2prefix" in REGISTRIES[1]
    (1, True)
    >>> REGISTRIES[1].remove("top2prefix")  # (the example leaves the registry as it found it)
    """
    tiers = (tier,) if isinstance(tier, int) else tuple(tier)
    for t in tiers:
        if t not in REGISTRIES:
            raise ValueError(f"tier must be 1, 2, 3 or 4, got {t!r}")

    if unsorted is not None and unsorted is not False and not set(tiers) <= {3, 4}:
        raise ValueError("unsorted= is for aggregators (tiers 3 and 4)")
    if parts is not None and (not set(tiers) <= {3, 4} or not isinstance(parts, Parts)):
        raise ValueError("parts= is for aggregators (tiers 3 and 4) and takes a tiers.Parts")

    def decorate(fn: Callable) -> Callable:
        fn_name = name or fn.__name__
        _check_name(fn_name)
        if fn_name == JOIN:
            raise ValueError(f"{JOIN!r} is reserved for the structural tier-3 entry")
        for t in tiers:
            REGISTRIES[t].check_free(fn_name, overwrite)
        any_order = fn if unsorted is True else (unsorted or None)
        for t in tiers:
            _probe(t, fn_name, fn)
            if any_order is not None and any_order is not fn:
                _probe(t, fn_name + " (unsorted)", any_order)
        module = module_digest(fn)
        for t in tiers:
            REGISTRIES[t].add(fn_name, TierFn(t, fn_name, fn, (fn.__doc__ or "").strip(), reference, module,
                                              any_order, parts), overwrite=True)  # (every name checked free above)
        return fn

    return decorate


def module_digest(fn: Callable) -> str:
    """Hash of the file that defines ``fn`` (16 hex digits; "" when it has none).

    Part of a space's cache key: a module constant or helper that a tier function reads
    changes its scores without changing its source.
    """
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    path = getattr(module, "__file__", None)
    if path is None:
        try:
            path = inspect.getsourcefile(fn)
        except TypeError:
            path = None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16] if path else ""
    except OSError:
        return ""


def load_module_file(path) -> object:
    """Import the user's tier module ``path`` (a .py file) so that its decorators register its functions.

    A file already imported in this process is imported again when its contents changed (a
    notebook edited between two searches): the functions the old version registered are
    removed first, so the new ones register under the same names and the space's cache key
    (which covers the file's contents) moves with them.
    """
    import importlib.util
    path = Path(path)
    source = path.read_bytes()
    contents = hashlib.sha256(source).hexdigest()[:16]
    name = ("pregen_user_tiers_" + re.sub(r"\W", "_", path.stem) + "_"
            + hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16])
    loaded = sys.modules.get(name)
    if loaded is not None and getattr(loaded, "__pregen_contents__", None) == contents:
        return loaded
    if loaded is not None:  # an earlier version of the file: forget what it registered
        for registry in REGISTRIES.values():
            for fn_name in [n for n, t in registry.items() if t.fn is not None and t.fn.__module__ == name]:
                registry.remove(fn_name)
        del sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    module.__pregen_contents__ = contents
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]  # a failed import is not kept: a retry runs the module again
        raise
    return module


def register_filter(name: str | None = None, **kwargs):
    """Register a tier-1 filter: ``fn(probs, ranks, mask) -> keep: bool[..., T]``."""
    return register(1, name, **kwargs)


def register_caption_score(name: str | None = None, **kwargs):
    """Register a tier-2 caption score: ``fn(probs, keep, mask) -> f[...]``."""
    return register(2, name, **kwargs)


def register_aggregator(name: str | None = None, tiers: tuple[int, ...] = (3, 4), **kwargs):
    """Register an aggregator for tier 3 and/or 4: ``fn(values, mask) -> f[...]``."""
    if not set(tiers) <= {3, 4}:
        raise ValueError(f"aggregators belong to tiers 3 and 4, got {tiers}")
    return register(tuple(tiers), name, **kwargs)


def get(tier: int, name: str) -> TierFn:
    """The registered tier function ``name`` of ``tier``; ``ValueError`` lists what exists."""
    try:
        return REGISTRIES[tier][name]
    except KeyError:
        known = ", ".join(sorted(REGISTRIES[tier]))
        raise ValueError(f"no tier-{tier} {TIER_NAMES[tier]} named {name!r}; registered: {known}") from None


def describe() -> str:
    """A readable list of every registered tier function and its docstring's first line."""
    lines = []
    for tier, registry in REGISTRIES.items():
        lines.append(f"tier {tier} ({TIER_NAMES[tier]}):")
        for tier_fn in registry.values():
            lines.append(f"  {tier_fn.name:12s} {tier_fn.doc.splitlines()[0] if tier_fn.doc else ''}")
    return "\n".join(lines)


REGISTRIES[3].add(JOIN, TierFn(3, JOIN, None, "No aggregation: every caption score of every image goes to tier 4."))
