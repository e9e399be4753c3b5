"""From a model's tokens (subword pieces) to RefProbs: the piece-to-word rule and the importers.

A model with a subword vocabulary (BPE, SentencePiece) reads a reference word as one or more
pieces; RefProbs at **token level** has one position per piece (then the end token), at **word
level** one position per reference word (then the end token, its own word). The word-level
numbers of a word made of pieces ``k = 1..n`` are:

- probability: the product of the pieces' probabilities, ``p(word) = prod_k p(piece_k)`` (the
  chain rule: the model's probability of the whole word given the caption so far);
- rank: the **largest** of the pieces' ranks, ``rank(word) = max_k rank(piece_k)``.

So a word is the model's top choice (rank 0) exactly when every piece is, and a one-piece word
keeps its token's rank: with a word vocabulary both levels are the same numbers.

Why the largest rank. A word's exact rank among all words would need the probability of every
other word (every continuation of every prefix), which one teacher-forced pass does not give.
Of the rules that use the pieces' ranks, the largest is the one that reads the whole word: the
word survives a decoder that keeps the top ``k + 1`` pieces at each step (a per-step beam of
width ``k + 1``) exactly when its rank is at most ``k``, and a word with a bad piece anywhere
gets a bad rank. The first non-zero piece rank (the rank where greedy decoding leaves the
word) ignores every later piece: a word whose second piece the model ranks 5,000th would
count as the model's 2nd choice if its first piece was. The sum of ranks has no decoder
meaning and grows with the number of pieces, so long words would look worse than short ones
the model predicts as well. Since the 504 pre-gen metrics filter and average ranks, the rule
moves them (issue 19 saw it move a metric more than the gap between two checkpoints): compare
models only under one rule and one vocabulary, which RefProbs records (``units``,
``vocabulary``).

Dimensions: I images, R references per image, T positions (tokens), V vocabulary entries.
"""
from __future__ import annotations

import numpy as np

WORD_RANK = np.maximum
"""How pieces' ranks combine into the word's (``WORD_RANK.at``): the largest (see the module docstring)."""

_END = object()


def words_from_pieces(log_probs: np.ndarray, ranks: np.ndarray, word_starts: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray]:
    """One reference's pieces to words: (log-probabilities f[W], ranks i[W]).

    log_probs: f[T] the pieces' log-probabilities; ranks: i[T]; word_starts: bool[T], True where
    a word begins (the first position must be True). A word's log-probability is the sum of
    its pieces', its rank the largest of theirs.
    """
    group = np.cumsum(word_starts) - 1
    words = int(group[-1]) + 1
    word_log_probs = np.zeros(words, np.float64)
    np.add.at(word_log_probs, group, log_probs)
    word_ranks = np.zeros(words, np.int64)
    WORD_RANK.at(word_ranks, group, ranks)
    return word_log_probs, word_ranks


def to_word_units(ref_probs, word_starts, vocabulary: str | None = None):
    """A token-level RefProbs to word level: positions grouped by ``word_starts`` bool[I, R, T].

    word_starts must be True at each reference's first position and at its last real
    position (the end token, its own word); padding is ignored. Probabilities are multiplied
    in log space (float64), ranks combined by ``WORD_RANK``.
    """
    from .refprobs import RefProbs
    mask = np.asarray(ref_probs.mask)
    starts = np.asarray(word_starts, bool)
    if starts.shape != mask.shape:
        raise ValueError(f"word_starts has shape {starts.shape} but the RefProbs has {mask.shape}")
    starts = starts & mask
    lengths = mask.sum(-1)
    real = lengths > 0
    first = starts[..., 0]
    last = np.take_along_axis(starts, np.maximum(lengths - 1, 0)[..., None], -1)[..., 0]
    for name, ok in (("the first position", first), ("the end token (the last position)", last)):
        if (real & ~ok).any():
            i, r = np.argwhere(real & ~ok)[0]
            raise ValueError(f"image {i}, reference {r}: {name} does not begin a word in word_starts")
    group = np.cumsum(starts, -1) - 1
    words = starts.sum(-1)
    width = int(words.max())
    with np.errstate(divide="ignore"):
        log_probs = np.log(np.asarray(ref_probs.probs, np.float64))
    images, refs, _ = mask.shape
    flat = ((np.arange(images)[:, None, None] * refs + np.arange(refs)[None, :, None]) * width + group)[mask]
    word_log_probs = np.zeros(images * refs * width, np.float64)
    np.add.at(word_log_probs, flat, log_probs[mask])
    word_ranks = np.zeros(images * refs * width, np.int64)
    WORD_RANK.at(word_ranks, flat, np.asarray(ref_probs.ranks)[mask])
    word_mask = np.arange(width) < words[..., None]
    shape = (images, refs, width)
    probs = np.where(word_mask, np.exp(word_log_probs.reshape(shape)), 0.0)
    return RefProbs(probs, word_ranks.reshape(shape).astype(np.int32), word_mask, ref_probs.source,
                    units="word", vocabulary=vocabulary or ref_probs.vocabulary)


# ------------------------------------------------------------------ importers


def _strict_zip(names: tuple[str, ...], iterables, where: str):
    """Yield (k, [items]) of parallel iterables; ValueError when they do not have the same length.

    Written with ``next`` rather than zip/enumerate, which keep their last tuple alive: the
    caller's [T, V] arrays must be freed one by one.
    """
    iterators = [iter(x) for x in iterables]
    k = 0
    while True:
        items = [next(it, _END) for it in iterators]
        ended = [name for name, item in zip(names, items) if item is _END]
        if len(ended) == len(items):
            return
        if ended:
            going = [name for name, item in zip(names, items) if item is not _END]
            raise ValueError(f"{where}{', '.join(ended)} ended after {k} entries but {', '.join(going)} did not "
                             "(one entry per image, and per reference within an image, in the same order)")
        yield k, items
        del items  # let the caller's [T, V] array go before the next one is read
        k += 1


def _per_reference(names, columns, source):
    """Yield (i, r, where, items) over images and references of parallel nested iterables.

    ``columns`` holding None (no word starts) are read as None for every reference.
    """
    present = [k for k, column in enumerate(columns) if column is not None]
    prefix = f"{source}: " if source else ""
    for i, images in _strict_zip(tuple(names[k] for k in present), [columns[k] for k in present], prefix):
        count = 0
        for r, refs in _strict_zip(tuple(names[k] for k in present), images, f"{prefix}image {i}: "):
            items = [None] * len(columns)
            for k, item in zip(present, refs):
                items[k] = item
            count += 1
            del refs
            yield i, r, f"{prefix}image {i}, reference {r}", items
            del items
        if not count:
            raise ValueError(f"{prefix}image {i} has no references")


def _vector(value, where: str, name: str, kind: str) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != 1:
        raise ValueError(f"{where}: {name} must be 1-D [positions], got shape {array.shape}")
    if kind == "int" and not (np.issubdtype(array.dtype, np.integer) or (array.size == 0 and array.dtype == float)):
        raise ValueError(f"{where}: {name} must be integers, got {array.dtype}")
    if kind == "float" and not (np.issubdtype(array.dtype, np.floating) or np.issubdtype(array.dtype, np.integer)):
        raise ValueError(f"{where}: {name} must be numbers, got {array.dtype}")
    return array


def _starts(value, positions: int, where: str) -> np.ndarray:
    starts = np.asarray(value)
    if starts.shape != (positions,):
        raise ValueError(f"{where}: word_starts has shape {starts.shape} but there are {positions} positions: a "
                         "tokenization/length problem (one flag per token, the end token included)")
    if starts.dtype != np.bool_:
        if not np.issubdtype(starts.dtype, np.integer) or not np.isin(starts, (0, 1)).all():
            raise ValueError(f"{where}: word_starts must be booleans, got {starts.dtype}")
        starts = starts.astype(bool)
    if not starts[0]:
        raise ValueError(f"{where}: word_starts[0] is False, but the first token always begins a word")
    if not starts[-1]:
        raise ValueError(f"{where}: word_starts[{positions - 1}] is False, but the end token (the last "
                         "position) is its own word")
    return starts


def _length_problem(where: str, what: str) -> ValueError:
    return ValueError(f"{where}: {what}: a tokenization/length problem (a reference is its tokens, as the model "
                      "tokenizes it, then the end token; every per-position input needs one entry per token)")


def _token_scores(scores, target, where: str, logits: bool) -> tuple[np.ndarray, np.ndarray]:
    """One reference's [T, V] scores and T target ids -> (target log-probabilities f[T], ranks i[T])."""
    scores = np.asarray(scores)
    if scores.ndim != 2:
        raise ValueError(f"{where}: log-probabilities must be 2-D [positions, vocabulary], got shape {scores.shape}")
    if not (np.issubdtype(scores.dtype, np.floating) or np.issubdtype(scores.dtype, np.integer)):
        raise ValueError(f"{where}: log-probabilities must be numbers, got {scores.dtype}")
    target = _vector(target, where, "targets", "int")
    positions, size = scores.shape
    if len(target) != positions:
        raise _length_problem(where, f"{positions} rows of log-probabilities but {len(target)} target ids")
    if positions == 0:
        raise ValueError(f"{where}: no positions (every reference has at least the end token)")
    bad = (target < 0) | (target >= size)
    if bad.any():
        t = int(np.argmax(bad))
        raise ValueError(f"{where}, position {t}: token id {int(target[t])} is outside the vocabulary of {size} "
                         "entries: a tokenization problem (targets from another tokenizer?)")
    # float32 (or float64 if given): comparisons are exact in the input's own precision, and
    # numpy's float32 exp is ~10x faster than float64's, at ~1e-7 relative error in the sum.
    scores = scores.astype(np.result_type(scores.dtype, np.float32), copy=False)
    nan = np.isnan(scores) | (scores == np.inf)
    if nan.any():
        t = int(np.argwhere(nan)[0][0])
        raise ValueError(f"{where}, position {t}: a score is NaN or +inf")
    rows = np.arange(positions)
    target_scores = scores[rows, target]
    ranks = (scores > target_scores[:, None]).sum(1)  # strictly higher: ties do not count against the target
    top = scores.max(1, keepdims=True)
    log_norm = top[:, 0].astype(np.float64) + np.log(np.exp(scores - top).sum(1, dtype=np.float64))
    target_scores = target_scores.astype(np.float64)
    if logits:
        target_log_probs = target_scores - log_norm
    else:
        off = np.abs(log_norm) > 0.1  # loose: bfloat16 log-probabilities are only this exact
        if off.any():
            t = int(np.argmax(off))
            raise ValueError(f"{where}, position {t}: the probabilities sum to {np.exp(log_norm[t]):.6g}, not 1: "
                             "these are not log-probabilities (pass logits=True for raw scores)")
        target_log_probs = target_scores
    return target_log_probs, ranks


def _build(per_reference, units: str, source, vocabulary):
    """Pad (i, r, log-probabilities, ranks) rows into a RefProbs."""
    from .refprobs import RefProbs
    rows = list(per_reference)
    if not rows:
        raise ValueError(f"{source + ': ' if source else ''}no images")
    images = rows[-1][0] + 1
    refs = max(r for _, r, _, _ in rows) + 1
    width = max(len(lp) for _, _, lp, _ in rows)
    probs = np.zeros((images, refs, width), np.float64)
    ranks = np.zeros((images, refs, width), np.int32)
    mask = np.zeros((images, refs, width), bool)
    for i, r, log_probs, rank in rows:
        n = len(log_probs)
        probs[i, r, :n] = np.exp(log_probs)
        ranks[i, r, :n] = rank
        mask[i, r, :n] = True
    return RefProbs(probs, ranks, mask, source, units=units, vocabulary=vocabulary)


def _finish(i, r, where, target_log_probs, ranks, word_starts):
    if word_starts is None:
        return i, r, target_log_probs, ranks
    return (i, r, *words_from_pieces(target_log_probs, ranks, _starts(word_starts, len(ranks), where)))


def from_log_probs(log_probs, targets, word_starts=None, logits: bool = False, source: str | None = None,
                   vocabulary: str | None = None):
    """RefProbs from a model's full next-token distributions; see ``RefProbs.from_log_probs``."""
    names = ("log_probs", "targets", "word_starts")

    def rows():
        for i, r, where, (scores, target, starts) in _per_reference(names, (log_probs, targets, word_starts), source):
            target_log_probs, ranks = _token_scores(scores, target, where, logits)
            del scores  # one [T, V] array at a time
            yield _finish(i, r, where, target_log_probs, ranks, starts)
    return _build(rows(), "token" if word_starts is None else "word", source, vocabulary)


def from_token_scores(target_log_probs, ranks, word_starts=None, source: str | None = None,
                      vocabulary: str | None = None):
    """RefProbs from per-position (log-probability, rank) pairs; see ``RefProbs.from_token_scores``."""
    names = ("target_log_probs", "ranks", "word_starts")

    def rows():
        for i, r, where, (lp, rank, starts) in _per_reference(names, (target_log_probs, ranks, word_starts), source):
            lp = _vector(lp, where, "target_log_probs", "float").astype(np.float64)
            rank = _vector(rank, where, "ranks", "int")
            if len(lp) != len(rank):
                raise _length_problem(where, f"{len(lp)} log-probabilities but {len(rank)} ranks")
            if len(lp) == 0:
                raise ValueError(f"{where}: no positions (every reference has at least the end token)")
            bad = np.isnan(lp) | (lp > 1e-6)
            if bad.any():
                t = int(np.argmax(bad))
                raise ValueError(f"{where}, position {t}: log-probability {lp[t]} is not <= 0 (NaN, or not a "
                                 "log-probability)")
            if (rank < 0).any():
                t = int(np.argmax(rank < 0))
                raise ValueError(f"{where}, position {t}: negative rank {int(rank[t])}")
            yield _finish(i, r, where, np.minimum(lp, 0.0), rank, starts)
    return _build(rows(), "token" if word_starts is None else "word", source, vocabulary)
