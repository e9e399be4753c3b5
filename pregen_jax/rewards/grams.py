"""What both rewards read on the device: the samples' n-grams with their counts, and each
image's sorted reference n-grams to look them up in."""
from __future__ import annotations

import flax.struct
import jax
import jax.numpy as jnp
import numpy as np

from .ngrams import device_keys, sample_lengths, search_keys, search_steps, split_key
from .tables import ReferenceTable


class ArrayPytree:
    """A reward as a JAX pytree (``jax.tree_util.register_pytree_node_class`` on the subclass): its
    ``_ARRAYS`` attributes are the leaves, passed to jitted functions as arguments (so its tables are
    not baked in as constants), its ``_STATIC`` attributes the static part."""

    _ARRAYS: tuple[str, ...] = ()
    _STATIC: tuple[str, ...] = ()

    def tree_flatten(self):
        return tuple(getattr(self, a) for a in self._ARRAYS), tuple(getattr(self, s) for s in self._STATIC)

    @classmethod
    def tree_unflatten(cls, static, arrays):
        reward = object.__new__(cls)
        reward.__dict__.update(zip(cls._ARRAYS, arrays), **dict(zip(cls._STATIC, static)))
        return reward


@flax.struct.dataclass
class SampleGrams:
    """The n-grams of B samples, order n + 1 starting at position t in [:, n, t].

    hi, lo: u32[B, 4, T] the keys; first: bool[B, 4, T] the first occurrence of a distinct n-gram
    of the sentence (each distinct n-gram is counted at its first occurrence only); tf: i32[B, 4, T]
    its count in the sentence; lengths: i32[B] the sentence's words (end token included when counted).
    """

    hi: jax.Array
    lo: jax.Array
    first: jax.Array
    tf: jax.Array
    lengths: jax.Array


def sample_grams(samples: jax.Array, pad_id: int, end: str, width) -> SampleGrams:
    """samples: i[B, T] from ``row_ids`` (read up to ``width`` by the rule ``end``) -> their ``SampleGrams``.

    Counts come from comparing every pair of positions (T x T per order): T is a caption's
    length, so that is cheaper on the device than a sort per row.
    """
    lengths = sample_lengths(samples, pad_id, end, width)
    hi, lo, valid = device_keys(samples, lengths)
    same = (hi[..., :, None] == hi[..., None, :]) & (lo[..., :, None] == lo[..., None, :])
    same = same & valid[..., :, None] & valid[..., None, :]
    T = samples.shape[1]  # noqa: N806
    earlier = jnp.arange(T)[None, :] < jnp.arange(T)[:, None]  # [t, u]: u before t
    first = valid & ~jnp.any(same & earlier, -1)
    return SampleGrams(hi, lo, first, jnp.sum(same, -1, dtype=jnp.int32), lengths)


@flax.struct.dataclass
class ImageGrams:
    """Every image's distinct reference n-grams on the device, sorted by (image, key).

    hi, lo: u32[E] (at least one entry); start, stop: i32[images] each image's entries;
    ref_count: i32[images]; steps: binary-search iterations for the largest image.
    """

    hi: jax.Array
    lo: jax.Array
    start: jax.Array
    stop: jax.Array
    ref_count: jax.Array
    steps: int = flax.struct.field(pytree_node=False)

    @classmethod
    def of(cls, table: ReferenceTable) -> ImageGrams:
        hi, lo = split_key(table.keys if len(table.keys) else np.zeros(1, np.uint64))
        return cls(jnp.asarray(hi), jnp.asarray(lo), jnp.asarray(table.start, jnp.int32),
                   jnp.asarray(table.start + table.count, jnp.int32), jnp.asarray(table.ref_count, jnp.int32),
                   search_steps(int(table.count.max(initial=0))))

    def find(self, grams: SampleGrams, image_index: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Each sample n-gram's entry in its image's references: (entry i32[B, 4, T], found bool[B, 4, T]);
        found only at first occurrences."""
        start = self.start[image_index][:, None, None]
        stop = self.stop[image_index][:, None, None]
        entry, found = search_keys(self.hi, self.lo, grams.hi, grams.lo, start, stop, self.steps)
        return entry, found & grams.first


def padded(values: np.ndarray, dtype) -> jax.Array:
    """A host array on the device, one zero row added where it is empty (tables keep one entry)."""
    values = np.asarray(values)
    if len(values) == 0:
        values = np.zeros((1, *values.shape[1:]), values.dtype)
    return jnp.asarray(values, dtype)
