"""Ids from any array library in, rewards back in the caller's kind of array, in few shapes.

``read_ids`` takes what speaks DLPack (torch tensors on CPU or GPU, numpy, cupy) or a JAX array:
it checks every id against the allowed range *on the caller's array, in its own integer type*
(``x.min()``, ``x.max()``: two reductions where the array lives, one sync), then imports it
through DLPack (no copy where JAX shares the device) and casts it to int32 on the device, the
one cast (torch's int64 ids). The check comes first because JAX without x64 reads an int64
buffer as int32 and would wrap an id of 2**32 + 5 to 5. Read-only numpy arrays, which DLPack
cannot export, and plain lists go through the host instead.

``Caller.give`` hands the result back as the caller's kind: numpy in, numpy out; torch in, a torch
tensor on the input's device (DLPack again); JAX or anything else, a JAX array.

``bucket`` and ``pad_to`` pad a batch to a few fixed shapes (rows to 8, 10, 12, 14, 16, 20, ...,
four sizes an octave; positions to a multiple of 4), so a training loop whose last batch is
short compiles a handful of programs, not one per batch size; the rewards read each row only up
to its real width.
"""
from __future__ import annotations

import dataclasses
import sys
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec


@dataclasses.dataclass(frozen=True)
class Caller:
    """How the rewards go back: ``kind`` "jax", "numpy" or "dlpack" (then ``library``: the
    caller's module with ``from_dlpack``, e.g. torch, and ``device``: the input's device)."""

    kind: str
    library: Any = None
    device: Any = None

    def give(self, out: jax.Array, rows: int, shape: tuple[int, ...] | None = None):
        """The first ``rows`` of ``out`` (reshaped to ``shape`` if given) as the caller's kind of array."""
        if self.kind == "numpy":
            got = np.asarray(out)[:rows]
        elif self.kind == "dlpack":
            got = self.library.from_dlpack(out)[:rows]
            if self.device is not None and hasattr(got, "to") and got.device != self.device:
                got = got.to(self.device)
        else:
            got = out[:rows]
        return got if shape is None else got.reshape(shape)


def is_traced(*arrays) -> bool:
    """Whether any of ``arrays`` is a JAX tracer (the reward called inside the caller's jit)."""
    return any(isinstance(a, jax.core.Tracer) for a in arrays)


def read_ids(x, name: str, high: int, device=None) -> tuple[jax.Array, Caller]:
    """(i32 array on ``device`` (a device or a sharding: ``placement``), the caller) from integer ids in 0..``high``; a ValueError naming
    ``name`` for a float or bool array, or an id out of range, before anything reaches JAX."""
    if isinstance(x, jax.Array):
        caller = Caller("jax")
    elif isinstance(x, np.ndarray):
        caller = Caller("numpy")
    elif hasattr(x, "__dlpack__"):
        caller = Caller("dlpack", sys.modules[type(x).__module__.partition(".")[0]], getattr(x, "device", None))
    else:
        x, caller = np.asarray(x), Caller("jax")
    kind = str(x.dtype).rpartition(".")[2]
    if "int" not in kind:  # int8..int64, uint8..uint64, in numpy's, JAX's and torch's spelling
        raise ValueError(f"{name}: token ids must be integers, not {kind}")
    if int(np.prod(x.shape)) and (int(x.min()) < 0 or int(x.max()) > high):
        raise ValueError(f"{name}: ids must lie in 0..{high}; found {int(x.min())}..{int(x.max())}")
    x = jnp.asarray(imported(x, caller.kind))
    x = x if x.dtype == jnp.int32 else x.astype(jnp.int32)
    return (x if device is None else jax.device_put(x, device)), caller


def imported(x, kind: str):
    """``x`` as JAX sees it: through DLPack where it can be (JAX imports compact layouts only, so a
    strided view is made contiguous by its own library first: ``contiguous()`` as torch names it),
    else through the host (read-only numpy arrays, which DLPack cannot export; lists)."""
    if kind == "numpy":
        return jax.dlpack.from_dlpack(np.ascontiguousarray(x)) if x.flags.writeable else x
    if kind == "dlpack":
        contiguous = getattr(x, "contiguous", None)
        return jax.dlpack.from_dlpack(contiguous() if callable(contiguous) else x)
    return x


def bucket(n: int) -> int:
    """The padded size of ``n`` rows: the least of 8, 10, 12, 14, 16, 20, 24, 28, 32, 40, ... (four
    sizes an octave: 2**k times 1, 1.25, 1.5, 1.75) >= n; at most a quarter more rows."""
    size = 8
    while size < n:
        size += 1 << (size.bit_length() - 3)
    return size


def pad_to(x: jax.Array, shape: tuple[int, ...], fill: int) -> jax.Array:
    """``x`` padded at the end of every axis to ``shape`` with ``fill``."""
    widths = [(0, s - n) for s, n in zip(shape, x.shape)]
    return x if not any(w for _, w in widths) else jnp.pad(x, widths, constant_values=fill)


def positions(width: int) -> int:
    """The padded number of positions of rows ``width`` ids wide: a multiple of 4 (at least 8)."""
    return max(8, -(-width // 4) * 4)


def placement(tree):
    """Where inputs must go to meet the reward's tables: their one device; replicated over the mesh
    their tables are placed on (``jax.device_put(reward, NamedSharding(mesh, P()))``); else None."""
    leaves = [leaf for leaf in jax.tree_util.tree_leaves(tree) if isinstance(leaf, jax.Array)]
    device_sets = {frozenset(leaf.devices()) for leaf in leaves}
    if len(device_sets) != 1:
        return None
    devices = device_sets.pop()
    if len(devices) == 1:
        return next(iter(devices))
    sharding = leaves[0].sharding
    return NamedSharding(sharding.mesh, PartitionSpec()) if isinstance(sharding, NamedSharding) else None
