"""Reference probabilities (the pre-gen input) and generated captions for a whole split.

Both stream fixed-size, padded batches through jit-compiled functions, so memory stays
bounded for any test-set size and jit compiles one shape per length bucket.
"""
from __future__ import annotations

import warnings

import numpy as np
from tqdm.auto import tqdm

from . import decoding
from .datasets import Vocabulary
from .models import Captioner
from .types import RefProbs

BUCKET = 8  # caption lengths are padded up to a multiple of this


def encode_references(captions, vocab: Vocabulary, source: str = "references"):
    """Captions ``[n][r] -> tokens`` to (image, ref, ids) triples; errors name the image."""
    triples = []
    for n, refs in enumerate(captions):
        if not refs:
            raise ValueError(f"{source}: image {n} has no reference captions")
        for r, tokens in enumerate(refs):
            if not tokens:
                raise ValueError(f"{source}: image {n}, reference {r} is an empty caption")
            triples.append((n, r, vocab.encode(tokens)))
    return triples


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


def check_model_vocab(model: Captioner, params, vocab: Vocabulary) -> None:
    out_size = params["params"]["out"]["kernel"].shape[-1]
    if out_size != len(vocab) or model.vocab_size != len(vocab):
        raise ValueError(f"the model predicts {out_size} tokens but the vocabulary has {len(vocab)}: "
                         "model and vocabulary do not match")


def compute_ref_probs(model: Captioner, params, features: np.ndarray, captions, vocab: Vocabulary,
                      batch_size: int = 512, progress: bool = True, source: str = "references") -> RefProbs:
    """Teacher-forced probability and rank of every reference token (m words + end token).

    features: f32[I, D]; captions[i][r]: token lists -> RefProbs [I, R, T] with T = longest m+1.
    Unknown words are read as the unknown token, as the model saw them in training.
    """
    check_model_vocab(model, params, vocab)
    if len(features) != len(captions):
        raise ValueError(f"{source}: {len(features)} feature rows for {len(captions)} images")
    triples = encode_references(captions, vocab, source)
    unknown = sum(1 for refs in captions for ref in refs for token in ref if token not in vocab.index)
    if unknown:
        total = sum(len(ref) for refs in captions for ref in refs)
        warnings.warn(f"{source}: {unknown} of {total} reference tokens are not in the model's vocabulary "
                      f"and are read as {vocab.tokens[vocab.unk_id]} (as the model saw rare words in training)",
                      stacklevel=2)
    num_refs = max(len(refs) for refs in captions)
    ids, lengths = padded_ids([token_ids for _, _, token_ids in triples])
    positions = int(lengths.max())
    image_of = np.array([n for n, _, _ in triples])
    ref_of = np.array([r for _, r, _ in triples])
    order = np.argsort(lengths, kind="stable")  # shortest first, so batches share a bucket length
    probs = np.zeros((len(captions), num_refs, positions), np.float32)
    ranks = np.zeros((len(captions), num_refs, positions), np.int32)
    mask = np.zeros((len(captions), num_refs, positions), bool)
    mask[image_of, ref_of] = np.arange(positions) < lengths[:, None]
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    for batch in tqdm(batches, desc="reference probabilities", unit="batch", disable=not progress, leave=False):
        width = bucket_width(int(lengths[batch].max()))
        rows = np.zeros(batch_size, np.int64)                           # padding rows repeat reference 0
        rows[:len(batch)] = batch
        inputs, targets = ids[rows, :width], ids[rows, 1:width + 1]
        batch_probs, batch_ranks = decoding.true_token_probs(model, params, features[image_of[rows]], inputs, targets)
        keep = min(width, positions)
        valid = mask[image_of[batch], ref_of[batch], :keep]
        probs[image_of[batch], ref_of[batch], :keep] = np.where(valid, np.asarray(batch_probs)[:len(batch), :keep], 0)
        ranks[image_of[batch], ref_of[batch], :keep] = np.where(valid, np.asarray(batch_ranks)[:len(batch), :keep], 0)
    bad = mask & ~np.isfinite(probs)
    if bad.any():
        n, r, t = np.argwhere(bad)[0]
        raise ValueError(f"{source}: the model gave a non-finite probability (image {n}, reference {r}, "
                         f"position {t}); the checkpoint may be diverged")
    return RefProbs(probs, ranks, mask, source=source)


def generate_captions(model: Captioner, params, features: np.ndarray, vocab: Vocabulary, beam_width: int = 1,
                      max_len: int = 50, min_len: int = 5, batch_size: int = 250, progress: bool = True):
    """Captions (token lists) for every row of ``features``: greedy when beam_width is 1."""
    check_model_vocab(model, params, vocab)
    captions = []
    batches = range(0, len(features), batch_size)
    for start in tqdm(batches, desc=f"generation (beam {beam_width})", unit="batch", disable=not progress, leave=False):
        chunk = features[start:start + batch_size]
        padded = np.zeros((batch_size, chunk.shape[1]), chunk.dtype)
        padded[:len(chunk)] = chunk
        if beam_width == 1:
            tokens = decoding.greedy(model, params, padded, max_len, min_len)
        else:
            tokens = decoding.beam_search(model, params, padded, beam_width, max_len, min_len)
        captions += [vocab.decode(row) for row in np.asarray(tokens)[:len(chunk)]]
    return captions
