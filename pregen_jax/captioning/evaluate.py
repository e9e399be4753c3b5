"""A caption model on a whole split: reference probabilities (the pre-gen input) and captions.

Both stream fixed-size, padded batches through jit-compiled functions, so memory stays
bounded for any test-set size and jit compiles one shape per length bucket. Every batch is
split over the process's local devices (``DataParallel``: one code path for one CPU, four
fake CPU devices or eight GPUs); each device runs the one-device program on its rows.
"""
from __future__ import annotations

import dataclasses
import functools
import warnings

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P
from tqdm.auto import tqdm

from ..datasets import UNK, Vocabulary
from ..progress import bar_disabled
from ..refprobs import RefProbs, reference_fingerprint
from . import decode
from .input_pipeline import bucket_width, count_unknown, encode_references, padded_ids
from .models import Captioner

BATCH = "batch"  # the mesh axis batches are split along


def round_up(count: int, multiple: int) -> int:
    """The smallest multiple of ``multiple`` that is at least ``count``."""
    return -(-count // multiple) * multiple


@dataclasses.dataclass(frozen=True)
class DataParallel:
    """Batches split along their first axis over ``mesh``'s devices; parameters replicated.

    A batch of B rows gives each of the D devices B / D rows (B is rounded up to a multiple of
    D with ``round_up``), and each device runs the same program as one device would, with no
    communication (``shard_map``), so results do not depend on D beyond float rounding.
    """

    mesh: Mesh

    @classmethod
    def over(cls, devices=None) -> DataParallel:
        """Over ``devices`` (default: this process's local devices; other processes have their own)."""
        devices = list(devices) if devices is not None else jax.local_devices()
        return cls(Mesh(np.array(devices), (BATCH,)))

    @property
    def size(self) -> int:
        return self.mesh.size

    def round_up(self, batch_size: int) -> int:
        """The smallest multiple of the device count that is at least ``batch_size``."""
        return round_up(batch_size, self.size)

    def replicate(self, tree):
        """A pytree (the parameters) copied whole to every device, once per call."""
        return jax.device_put(tree, NamedSharding(self.mesh, P()))

    def split(self, array: np.ndarray) -> jax.Array:
        """array: [B, ...] with B a multiple of ``size`` -> its rows spread over the devices."""
        return jax.device_put(array, NamedSharding(self.mesh, P(BATCH)))


@functools.cache
def _per_device(kind: str, model: Captioner, mesh: Mesh, statics: tuple):
    """``decode.true_token_probs`` ("probs"), ``decode_greedy`` ("greedy") or ``decode_beams`` ("beam") as
    jit(shard_map): params replicated, every other argument split by rows.

    Cached per (function, model, mesh, static arguments), so each is traced once per process.
    """
    if kind == "probs":  # rows: features, inputs, targets
        def local(params, *rows):
            return decode.true_token_probs(model, params, *rows)
        batched = 3
    else:  # rows: features and which of them are real (not padding)
        fn = {"greedy": decode.decode_greedy, "beam": decode.decode_beams}[kind]

        def local(params, features, real):
            return fn(model, params, features, *statics, real=real)
        batched = 2
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(P(), *[P(BATCH)] * batched), out_specs=P(BATCH),
                                 check_vma=False))


def check_model_vocab(model: Captioner, params, vocab: Vocabulary, source: str = "model") -> None:
    """A model and a vocabulary that do not match are an error, not wrong probabilities."""
    out_size = params["params"]["out"]["kernel"].shape[-1]
    if out_size != len(vocab) or model.vocab_size != len(vocab):
        raise ValueError(f"{source}: the model predicts {out_size} tokens but the vocabulary has {len(vocab)}: "
                         "model and vocabulary do not match")


def reference_probs(model: Captioner, params, features: np.ndarray, captions, vocab: Vocabulary,
                    batch_size: int = 512, progress: bool = True, source: str = "references",
                    warn_unknown: bool = True, devices=None) -> RefProbs:
    """Teacher-forced probability and rank of every reference token (m words + end token).

    features: f32[I, D]; captions[i][r]: word lists -> RefProbs [I, R, T] with T = longest m+1 over the
    vocabulary's tokens (words, or the pieces of a subword vocabulary: then ``units = "token"``).
    Unknown words are read as the unknown token, as the model saw them in training (with a
    warning that counts them). Batches are split over ``devices`` (default: all local ones).
    """
    check_model_vocab(model, params, vocab, source)
    if len(features) != len(captions):
        raise ValueError(f"{source}: {len(features)} feature rows for {len(captions)} images")
    triples = encode_references(captions, vocab, source)
    unknown, total = count_unknown(captions, vocab) if warn_unknown else (0, 0)
    if unknown:
        warnings.warn(f"{source}: {unknown} of {total} reference tokens are not in the model's vocabulary "
                      f"and are read as {UNK} (as the model saw rare words in training)",
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
    parallel = DataParallel.over(devices)
    batch_size = parallel.round_up(batch_size)
    probs_fn, params = _per_device("probs", model, parallel.mesh, ()), parallel.replicate(params)
    batches = [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    for batch in tqdm(batches, desc="reference probabilities", unit="batch", disable=bar_disabled(progress), leave=False):
        width = bucket_width(int(lengths[batch].max()))
        rows = np.zeros(batch_size, np.int64)                           # padding rows repeat reference 0
        rows[:len(batch)] = batch
        inputs, targets = ids[rows, :width], ids[rows, 1:width + 1]
        batch_probs, batch_ranks = probs_fn(params, *map(parallel.split, (features[image_of[rows]], inputs, targets)))
        keep = min(width, positions)
        valid = mask[image_of[batch], ref_of[batch], :keep]
        probs[image_of[batch], ref_of[batch], :keep] = np.where(valid, np.asarray(batch_probs)[:len(batch), :keep], 0)
        ranks[image_of[batch], ref_of[batch], :keep] = np.where(valid, np.asarray(batch_ranks)[:len(batch), :keep], 0)
    bad = mask & ~np.isfinite(probs)
    if bad.any():
        n, r, t = np.argwhere(bad)[0]
        raise ValueError(f"{source}: the model gave a non-finite probability (image {n}, reference {r}, "
                         f"position {t}); the checkpoint may be diverged")
    units = "word" if vocab.kind == "word" else "token"
    return RefProbs(probs, ranks, mask, source=source, units=units, vocabulary=vocab.name,
                    references=reference_fingerprint(captions, vocab, units))


def perplexity(ref_probs: RefProbs) -> float:
    """Per-token perplexity exp(-mean log p) over every real position (the usual validation criterion)."""
    log_probs = np.log(np.clip(np.asarray(ref_probs.probs, np.float64), 1e-30, None))
    return float(np.exp(-log_probs[np.asarray(ref_probs.mask)].mean()))


def generate_captions(model: Captioner, params, features: np.ndarray, vocab: Vocabulary, beam_width: int = 1,
                      max_len: int = 50, min_len: int = 5, batch_size: int = 250, progress: bool = True,
                      devices=None, stop_early: bool = True, with_steps: bool = False):
    """Captions (token lists) for every row of ``features: f32[I, D]``: greedy when beam_width is 1.

    Batches are split over ``devices`` (default: all local ones). Each batch's decoding stops
    once its real rows' captions have ended (``stop_early``; the same captions as running all
    ``max_len`` positions); the rows that pad the last batch do not hold it up. A model that
    gives a non-finite logit is a ValueError. With ``with_steps``, also the positions each
    batch ran (the most over the devices): ``(captions, steps)``.
    """
    check_model_vocab(model, params, vocab)
    parallel = DataParallel.over(devices)
    batch_size = parallel.round_up(batch_size)
    if beam_width == 1:
        decode_fn = _per_device("greedy", model, parallel.mesh, (max_len, min_len, stop_early))
    else:
        decode_fn = _per_device("beam", model, parallel.mesh, (beam_width, max_len, min_len, stop_early))
    params = parallel.replicate(params)
    captions, steps = [], []
    batches = range(0, len(features), batch_size)
    for start in tqdm(batches, desc=f"generation (beam {beam_width})", unit="batch", disable=bar_disabled(progress), leave=False):
        chunk = features[start:start + batch_size]
        padded = np.zeros((batch_size, chunk.shape[1]), chunk.dtype)
        padded[:len(chunk)] = chunk
        real = np.arange(batch_size) < len(chunk)
        decoded = decode.check_finite(decode_fn(params, parallel.split(padded), parallel.split(real)), real,
                                      f"generation (images {start}-{start + len(chunk) - 1})")
        captions += [vocab.decode(row) for row in np.asarray(decoded.tokens)[:len(chunk)]]
        steps.append(int(np.asarray(decoded.steps).max()))
    return (captions, steps) if with_steps else captions
