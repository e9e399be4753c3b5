"""Captions to padded batches of token ids, bucketed by length so that jit compiles few shapes.

Teacher forcing reads a caption of m tokens as m+1 steps: inputs are the edge token then the
tokens, targets the tokens then the edge token (the end of the caption is predicted too). The
tokens are the vocabulary's: words, or the pieces of a subword vocabulary (``datasets.tokenizer``).
"""
from __future__ import annotations

import numpy as np

from ..datasets import CaptionVocabulary

BUCKET = 8  # caption lengths are padded up to a multiple of this


def encode_references(captions, vocab: CaptionVocabulary, source: str = "references") -> list[tuple[int, int, list[int]]]:
    """Captions ``[n][r] -> tokens`` to (image, reference, token ids) triples.

    Raises ValueError naming ``source`` and the image for an empty reference list or caption.
    """
    triples = []
    for n, refs in enumerate(captions):
        if isinstance(refs, str):
            raise ValueError(f"{source}: image {n}'s references are one string; give a list of captions per image")
        if not refs:
            raise ValueError(f"{source}: image {n} has no reference captions")
        for r, tokens in enumerate(refs):
            if isinstance(tokens, str):  # a string would be read one character per token
                raise ValueError(f"{source}: image {n}, reference {r} is a string, not a list of tokens; "
                                 "tokenize it first (pregen_jax.datasets.tokenize, the alnum-lower tokenizer)")
            if not tokens:
                raise ValueError(f"{source}: image {n}, reference {r} is an empty caption")
            triples.append((n, r, vocab.encode(tokens)))
    return triples


def reference_word_starts(captions, vocab: CaptionVocabulary) -> np.ndarray:
    """bool[I, R, T]: True where a word begins among each reference's tokens then its end token
    (T = the longest m+1, as ``reference_probs`` lays them out); False in the padding."""
    starts = [[vocab.word_starts(tokens) + [True] for tokens in refs] for refs in captions]
    width = max(len(ref) for refs in starts for ref in refs)
    out = np.zeros((len(captions), max(len(refs) for refs in starts), width), bool)
    for i, refs in enumerate(starts):
        for r, ref in enumerate(refs):
            out[i, r, :len(ref)] = ref
    return out


def count_unknown(captions, vocab: CaptionVocabulary) -> tuple[int, int]:
    """(words read wholly or partly as the unknown token, all words) of ``captions[n][r]``."""
    unknown = sum(vocab.unknown_words(tokens) for refs in captions for tokens in refs)
    return unknown, sum(len(tokens) for refs in captions for tokens in refs)


def bucket_width(longest: int) -> int:
    """Positions a batch is padded to: ``longest`` rounded up to a multiple of BUCKET."""
    return -(-longest // BUCKET) * BUCKET


def padded_ids(id_lists) -> tuple[np.ndarray, np.ndarray]:
    """Token-id lists -> (ids i32[N, W + 1], lengths i32[N]) for teacher forcing.

    Row k is the edge token, the m words, then edge tokens, with W = bucket_width(longest m+1),
    so ``ids[:, :w]`` are the inputs and ``ids[:, 1:w + 1]`` the targets (the end token
    included) of any bucket width w <= W; lengths are m+1.
    """
    lengths = np.array([len(token_ids) for token_ids in id_lists]) + 1
    ids = np.zeros((len(id_lists), bucket_width(int(lengths.max())) + 1), np.int32)
    for k, token_ids in enumerate(id_lists):
        ids[k, 1:len(token_ids) + 1] = token_ids
    return ids, lengths


def training_batches(pairs, batch_size: int, rng: np.random.Generator) -> list[list[int]]:
    """Minibatches of indices into ``pairs`` (image, token ids) for one epoch.

    Shuffled, then sorted by length within chunks of 32 batches, so that a batch's captions
    are of similar length (little padding) while batch order stays random.
    """
    order = rng.permutation(len(pairs))
    chunk = batch_size * 32
    batches = []
    for start in range(0, len(order), chunk):
        block = sorted(order[start:start + chunk], key=lambda k: len(pairs[k][1]))
        batches += [block[s:s + batch_size] for s in range(0, len(block) - batch_size + 1, batch_size)]
    rng.shuffle(batches)
    return batches


def training_batch(pairs, batch: list[int], features: np.ndarray):
    """One minibatch: (features f32[B, D], inputs i32[B, W], targets i32[B, W], weights f32[B, W])."""
    ids, lengths = padded_ids([pairs[k][1] for k in batch])
    width = bucket_width(int(lengths.max()))
    weights = (np.arange(width) < lengths[:, None]).astype(np.float32)
    return features[[pairs[k][0] for k in batch]], ids[:, :width], ids[:, 1:width + 1], weights
