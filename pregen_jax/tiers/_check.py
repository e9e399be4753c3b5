"""``check``: does a tier function keep the contract the sweep relies on?

The sweep calls tier functions in ways a quick test does not: aggregators receive masks
that are scattered (each stratum's images are spread over the sorted column), values hold
zeros and +inf (a probability of 0, a perplexity of nothing kept), and leading batch axes
for filters, strata and metrics. An aggregator that reads ``values[..., (n-1)//2]`` as a
median passes a prefix-mask test and is wrong in the sweep; ``check`` catches that.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from ._registry import JOIN, REGISTRIES, TIER_NAMES, TierFn

BATCH = (3, 4)      # leading axes, as the sweep adds them
LENGTH = 9          # positions (filters, caption scores) or values (aggregators)
RTOL, ATOL = 2e-5, 1e-6


def check(fn_or_name, tier: int | None = None, seed: int = 0) -> None:
    """Run every check on a tier function; ``ValueError`` says what failed.

    Args:
      fn_or_name: a registered name, a ``TierFn``, or a function (then ``tier`` is needed
        unless the function is registered).
      tier: 1-4, to pick among functions of the same name in several tiers.
    Checks: masking equals slicing with scattered masks (aggregators) and padded positions
    (filters, caption scores); values with zeros and +inf; extra leading batch axes; jit
    equals eager; and, when registered with ``reference=``, equality with that plain-Python
    implementation.
    """
    for tier_fn in _resolve(fn_or_name, tier):
        if tier_fn.is_join:
            continue
        rng = np.random.default_rng(seed)
        {1: _check_filter, 2: _check_caption_score, 3: _check_aggregator, 4: _check_aggregator}[tier_fn.tier](
            tier_fn, rng)


def _resolve(fn_or_name, tier) -> list[TierFn]:
    if isinstance(fn_or_name, TierFn):
        return [fn_or_name]
    tiers = [tier] if tier else [1, 2, 3, 4]
    if isinstance(fn_or_name, str):
        found = [REGISTRIES[t][fn_or_name] for t in tiers if fn_or_name in REGISTRIES[t]]
        if not found:
            raise ValueError(f"no tier function named {fn_or_name!r}" + (f" in tier {tier}" if tier else ""))
    else:
        found = [f for t in tiers for f in REGISTRIES[t].values() if f.fn is fn_or_name]
        if not found:
            if tier is None:
                raise ValueError("check(fn) of an unregistered function needs its tier: check(fn, tier=3)")
            found = [TierFn(tier, getattr(fn_or_name, "__name__", "fn"), fn_or_name)]
    unique = {}
    for tier_fn in found:  # an aggregator registered for tiers 3 and 4 is checked once
        unique.setdefault((tier_fn.fn, tier_fn.tier in (3, 4)), tier_fn)
    return list(unique.values())


def _label(tier_fn: TierFn) -> str:
    return f"tier-{tier_fn.tier} {TIER_NAMES[tier_fn.tier]} {tier_fn.name!r}"


def _close(got, want) -> np.ndarray:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    same_inf = np.isinf(got) & np.isinf(want) & (np.sign(got) == np.sign(want))
    both_nan = np.isnan(got) & np.isnan(want)
    with np.errstate(invalid="ignore"):
        near = np.abs(got - want) <= ATOL + RTOL * np.abs(want)
    return same_inf | both_nan | near


def _expect(tier_fn, ok, what: str, got, want, index=None) -> None:
    ok = np.asarray(ok)
    if ok.all():
        return
    at = tuple(int(i) for i in np.argwhere(~ok)[0]) if ok.ndim else ()
    got_v = np.asarray(got)[at] if np.ndim(got) else got
    want_v = np.asarray(want)[at] if np.ndim(want) else want
    where = f" at batch index {at}" if at else ""
    raise ValueError(f"{_label(tier_fn)}: {what}{where}: got {got_v}, expected {want_v}")


def _shape(tier_fn, result) -> None:
    want_shape = BATCH + ((LENGTH,) if tier_fn.tier == 1 else ())
    if tuple(np.shape(result)) != want_shape:
        raise ValueError(f"{_label(tier_fn)}: returned shape {np.shape(result)} for inputs of shape "
                         f"{BATCH + (LENGTH,)}; expected {want_shape}")


def _common(tier_fn, args, result) -> None:
    """jit equals eager, and independence of the leading batch axes."""
    fn = tier_fn.fn
    jitted = jax.jit(fn)(*args)
    _expect(tier_fn, _close(jitted, result), "jit-compiled result differs from the eager one", jitted, result)
    flat = fn(*(a.reshape(-1, a.shape[-1]) for a in args))
    flat = np.asarray(flat).reshape(np.shape(result))
    _expect(tier_fn, _close(flat, result), "result depends on how the leading batch axes are shaped", flat, result)
    one = np.asarray(fn(*(a[:1, :1] for a in args)))
    _expect(tier_fn, _close(one, np.asarray(result)[:1, :1]),
            "result for one batch element depends on the other elements", one, np.asarray(result)[:1, :1])


def _left_aligned_mask(rng) -> np.ndarray:
    lengths = rng.integers(1, LENGTH + 1, BATCH)
    lengths.flat[0], lengths.flat[1] = 1, LENGTH
    return np.arange(LENGTH) < lengths[..., None]


def _probabilities(rng) -> np.ndarray:
    probs = rng.uniform(0.01, 1.0, BATCH + (LENGTH,))
    probs[rng.random(probs.shape) < 0.1] = 0.0       # an underflowed probability
    probs[rng.random(probs.shape) < 0.05] = 1.0
    return probs.astype(np.float32)


def _check_filter(tier_fn: TierFn, rng) -> None:
    mask = _left_aligned_mask(rng)
    probs = _probabilities(rng)
    ranks = np.where(rng.random(mask.shape) < 0.6, 0, rng.integers(1, 50, mask.shape)).astype(np.int32)
    args = (jnp.asarray(probs), jnp.asarray(ranks), jnp.asarray(mask))
    keep = np.asarray(tier_fn.fn(*args)) & mask
    _shape(tier_fn, keep)
    for index in np.ndindex(*BATCH):
        n = int(mask[index].sum())
        alone = np.asarray(tier_fn.fn(jnp.asarray(probs[index][None, :n]), jnp.asarray(ranks[index][None, :n]),
                                      jnp.ones((1, n), bool)))[0]
        if not (alone == keep[index][:n]).all():
            raise ValueError(f"{_label(tier_fn)}: padding changes the result at batch index {index}: "
                             f"{keep[index][:n].tolist()} with padding, {alone.tolist()} without")
        if tier_fn.reference is not None:
            want = list(tier_fn.reference(probs[index][:n].tolist(), ranks[index][:n].tolist()))
            if [bool(k) for k in keep[index][:n]] != [bool(k) for k in want]:
                raise ValueError(f"{_label(tier_fn)}: differs from its reference at batch index {index}: "
                                 f"{keep[index][:n].tolist()} vs {want}")
    # The sweep ANDs a filter's output with the mask, so only kept real positions must agree.
    _common(dataclasses.replace(tier_fn, fn=lambda p, r, m: tier_fn.fn(p, r, m) & m), args, keep)


def _check_caption_score(tier_fn: TierFn, rng) -> None:
    mask = _left_aligned_mask(rng)
    probs = _probabilities(rng)
    keep = mask & (rng.random(mask.shape) < 0.6)
    keep.flat[:LENGTH] = False                      # one reference with nothing kept
    args = (jnp.asarray(probs), jnp.asarray(keep), jnp.asarray(mask))
    result = np.asarray(tier_fn.fn(*args))
    _shape(tier_fn, result)
    for index in np.ndindex(*BATCH):
        n = int(mask[index].sum())
        alone = np.asarray(tier_fn.fn(jnp.asarray(probs[index][None, :n]), jnp.asarray(keep[index][None, :n]),
                                      jnp.ones((1, n), bool)))[0]
        _expect(tier_fn, _close(result[index], alone), f"padding changes the result at batch index {index}",
                result[index], alone)
        if tier_fn.reference is not None:
            want = tier_fn.reference(probs[index][:n].tolist(), keep[index][:n].tolist())
            _expect(tier_fn, _close(result[index], want), f"differs from its reference at batch index {index}",
                    result[index], want)
    _common(tier_fn, args, result)


def _check_aggregator(tier_fn: TierFn, rng) -> None:
    pool = np.array([0.0, 0.0, 1e-6, 0.1, 0.5, 1.0, 2.0, 7.5, 40.0, np.inf], np.float32)
    values = np.sort(rng.choice(pool, BATCH + (LENGTH,)) * rng.uniform(0.5, 1.5, BATCH + (LENGTH,)).astype(np.float32),
                     axis=-1)
    mask = rng.random(values.shape) < 0.5
    mask[0, 0] = True                                    # all values
    mask[0, 1] = np.arange(LENGTH) == LENGTH // 2        # a single value in the middle
    mask[0, 2] = np.arange(LENGTH) >= LENGTH - 2         # the largest two
    empty = ~mask.any(-1)
    mask[empty, rng.integers(0, LENGTH)] = True
    args = (jnp.asarray(values), jnp.asarray(mask))
    result = np.asarray(tier_fn.fn(*args))
    _shape(tier_fn, result)
    for index in np.ndindex(*BATCH):
        kept = values[index][mask[index]]
        alone = np.asarray(tier_fn.fn(jnp.asarray(kept[None]), jnp.ones((1, len(kept)), bool)))[0]
        if not _close(result[index], alone):
            raise ValueError(f"{_label(tier_fn)}: with a scattered mask {mask[index].astype(int).tolist()} it gives "
                             f"{result[index]}, but the same {len(kept)} values without the masked-out ones give "
                             f"{alone} (the sweep hands aggregators masks that are not prefixes: select entries "
                             "with the mask, not by position)")
        if tier_fn.reference is not None:
            want = tier_fn.reference([float(v) for v in kept])
            _expect(tier_fn, _close(result[index], want),
                    f"differs from its reference on values {kept.tolist()}", result[index], want)
    _common(tier_fn, args, result)
    if tier_fn.unsorted is not None:
        _check_unsorted(tier_fn, values, mask, result, rng)
    if tier_fn.parts is not None:
        _check_parts(tier_fn, values, mask, result, rng)


def _check_unsorted(tier_fn: TierFn, values, mask, result, rng) -> None:
    """Its ``unsorted`` form on every row shuffled (values and mask alike) gives ``fn``'s result."""
    order = np.argsort(rng.random(values.shape), axis=-1)
    shuffled = (jnp.asarray(np.take_along_axis(values, order, -1)), jnp.asarray(np.take_along_axis(mask, order, -1)))
    got = np.asarray(jax.jit(tier_fn.unsorted)(*shuffled))
    _expect(tier_fn, _close(got, result), "its unsorted= form on shuffled rows differs from it on sorted rows",
            got, result)


def _check_parts(tier_fn: TierFn, values, mask, result, rng) -> None:
    """Its ``parts`` on every row shuffled and cut into random pieces (one with nothing masked,
    and one that does not exist, its statistics NaN) gives ``fn``'s result."""
    order = np.argsort(rng.random(values.shape), axis=-1)
    values, mask = np.take_along_axis(values, order, -1), np.take_along_axis(mask, order, -1)
    bounds = [0, *np.sort(rng.choice(np.arange(1, LENGTH), 3, replace=False)).tolist(), LENGTH]
    pieces = [(values[..., a:b], mask[..., a:b]) for a, b in zip(bounds, bounds[1:])] + [(values[..., :2], mask[..., :2] & False)]
    partial = jax.jit(tier_fn.parts.partial)
    stats = [partial(jnp.asarray(v), jnp.asarray(m)) for v, m in pieces]
    if not all(isinstance(s, tuple) for s in stats):
        raise ValueError(f"{_label(tier_fn)}: its parts.partial must return a tuple of arrays, got {type(stats[0]).__name__}")
    stacked = tuple(jnp.stack([*column, jnp.full(BATCH, jnp.nan, column[0].dtype)], axis=-1) for column in zip(*stats))
    exists = np.arange(len(pieces) + 1) < len(pieces)
    got = np.asarray(jax.jit(tier_fn.parts.combine)(stacked, jnp.broadcast_to(exists, BATCH + exists.shape)))
    _expect(tier_fn, _close(got, result), "its parts= (statistics of pieces of each row, combined) differ from it on "
            "whole rows", got, result)


def registered() -> list[TierFn]:
    """Every registered tier function, aggregators once, in registry order (for test suites)."""
    out, seen = [], set()
    for tier in (1, 2, 3, 4):
        for tier_fn in REGISTRIES[tier].values():
            key = (tier_fn.fn, tier_fn.tier in (3, 4))
            if tier_fn.name == JOIN or key in seen:
                continue
            seen.add(key)
            out.append(tier_fn)
    return out


