"""The host-side tables a reward is built from: document frequencies and each image's reference n-grams.

Built once with numpy (uint64 keys, ``ngrams.host_keys``), then moved to the device as two uint32
words per key by the rewards themselves. Nothing here runs per training step.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from .ngrams import MAX_ID, check_end, check_ids, host_keys, key_of, sentence
from .pickled import read_cached_frequencies


def reference_sentences(references: Sequence[Sequence[Sequence[int]]], pad_id: int, end: str,
                        source: str = "references", max_id: int = MAX_ID) -> tuple[list[np.ndarray], np.ndarray]:
    """(every reference's words, read by the rule ``end`` (``ngrams.sentence``), grouped by image;
    i64[images] the number of references of each image).

    A ValueError naming ``source`` for no images, an image without references, an unknown rule,
    or an id out of range (negative or above ``max_id``).
    """
    check_end(end)
    if len(references) == 0:
        raise ValueError(f"{source}: no images")
    check_ids(np.array([pad_id]), f"{source}: pad_id", max_id)
    counts = np.fromiter(map(len, references), np.int64, len(references))
    if (counts == 0).any():
        raise ValueError(f"{source}: image {int(np.argmin(counts))} has no references")
    words = [sentence(ids, pad_id, end) for refs in references for ids in refs]
    check_ids(np.concatenate(words) if words else np.zeros(0, np.int64), source, max_id)
    return words, counts


@dataclasses.dataclass(frozen=True)
class DocumentFrequency:
    """How many images' references hold each n-gram, and of how many images.

    keys: u64[N] sorted (``ngrams`` keys, every order in one table); df: i64[N] >= 1; images:
    the number of images counted (CIDEr-D's idf numerator is log(images)).
    """

    keys: np.ndarray
    df: np.ndarray
    images: int

    @classmethod
    def from_references(cls, references, pad_id: int = 0, end: str = "row") -> DocumentFrequency:
        """From ``references[i]`` (image i's id sequences, read by the rule ``end``): an n-gram
        counts once per image whose references hold it, as pycocoevalcap's ``compute_doc_freq``
        and the cached frequencies of self-critical.pytorch's ``prepro_ngrams`` (distinct images)
        count. ``prepro_ngrams`` appends the end token to every reference: ``end="always"``."""
        words, counts = reference_sentences(references, pad_id, end)
        key, owner, _ = host_keys(words)
        image = np.repeat(np.arange(len(counts)), counts)[owner]
        order = np.lexsort((image, key))
        key, image = key[order], image[order]
        first = np.ones(len(key), bool)
        first[1:] = (key[1:] != key[:-1]) | (image[1:] != image[:-1])
        keys, df = np.unique(key[first], return_counts=True)
        return cls(keys, df.astype(np.int64), len(counts))

    @classmethod
    def from_counts(cls, counts: Mapping[Sequence[int], float], images: int,
                    source: str = "document frequencies") -> DocumentFrequency:
        """From a mapping of id n-grams (tuples of 1..4 ids, the end token as its id) to their
        document frequency, such as a cached ``document_frequency`` with its ``ref_len`` (images)."""
        if images < 1:
            raise ValueError(f"{source}: document frequencies of {images} images: need at least one")
        grams = list(counts)
        check_ids(np.fromiter((t for g in grams for t in g), np.int64), source)
        keys = np.fromiter((key_of(g) for g in grams), np.uint64, len(grams))
        df = np.fromiter((counts[g] for g in grams), np.float64, len(grams))
        order = np.argsort(keys)
        keys, df = keys[order], df[order]
        if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
            raise ValueError(f"{source}: an n-gram is listed twice")
        return cls(keys, df.astype(np.int64), int(images))

    @classmethod
    def from_pickle(cls, path) -> DocumentFrequency:
        """From self-critical.pytorch's cached frequencies (``prepro_ngrams.py``'s ``*-idxs.p``:
        ``{"document_frequency": {("12", "7", "0"): 3.0, ...}, "ref_len": images}``), read by a
        restricted unpickler (``pickled``: dicts, tuples, strings and numbers only, nothing
        executed). ``ref_len`` is the number of images (the reward takes its log, as ciderD does);
        the end token is the id string "0" (``prepro_ngrams`` appends it to every reference).
        A ValueError naming the file for anything else."""
        counts, images = read_cached_frequencies(path)
        return cls.from_counts(counts, images, source=str(path))

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """i64[...]: the document frequency of each key (0 where no image holds it)."""
        if len(self.keys) == 0:
            return np.zeros(np.shape(keys), np.int64)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        return np.where(self.keys[at] == keys, self.df[at], 0)


@dataclasses.dataclass(frozen=True)
class ReferenceTable:
    """Each image's distinct reference n-grams, with each reference's count of each.

    keys: u64[E], sorted by (image, key); order: i64[E] 1..4; start, count: i64[images] each
    image's entries; tf: i32[E, R] each reference slot's count of the entry's n-gram (R: the most
    references of an image); ref_count: i64[images]; words: i64[images, R] each reference's
    length (end token included when counted; 0 in empty slots).
    """

    keys: np.ndarray
    order: np.ndarray
    start: np.ndarray
    count: np.ndarray
    tf: np.ndarray
    ref_count: np.ndarray
    words: np.ndarray

    @classmethod
    def build(cls, references, pad_id: int = 0, end: str = "row", max_id: int = MAX_ID) -> ReferenceTable:
        words, counts = reference_sentences(references, pad_id, end, max_id=max_id)
        images, width = len(counts), int(counts.max())
        first_ref = np.concatenate([[0], np.cumsum(counts)[:-1]])
        ref_image = np.repeat(np.arange(images), counts)
        ref_slot = np.arange(len(words)) - first_ref[ref_image]
        key, owner, order = host_keys(words)
        image, slot = ref_image[owner], ref_slot[owner]
        sort = np.lexsort((key, image))
        key, image, slot, order = key[sort], image[sort], slot[sort], order[sort]
        new = np.ones(len(key), bool)
        new[1:] = (key[1:] != key[:-1]) | (image[1:] != image[:-1])
        entry = np.cumsum(new) - 1
        tf = np.zeros((int(new.sum()), width), np.int32)
        np.add.at(tf, (entry, slot), 1)
        lengths = np.zeros((images, width), np.int64)
        lengths[ref_image, ref_slot] = np.fromiter(map(len, words), np.int64, len(words))
        return cls(key[new], order[new], first_ref_of(image[new], images), np.bincount(image[new], minlength=images),
                   tf, counts, lengths)


def first_ref_of(sorted_owner: np.ndarray, owners: int) -> np.ndarray:
    """i64[owners]: where each owner's run starts in ``sorted_owner`` (its end where it has none)."""
    return np.searchsorted(sorted_owner, np.arange(owners))

