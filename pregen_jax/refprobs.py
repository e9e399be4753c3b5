"""Reference probabilities: what a model says about the reference captions, the pre-gen input.

The data that flows through pregen-jax has its dimensions named once:

Dimensions (used in every docstring):
  I  images            R  references per image (padded)
  T  positions per reference (padded; m words + the end token)
  S  strata             C  pre-gen metrics (columns of a space)
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import numpy as np

Array = Any  # a numpy or jax array
UNITS = ("word", "token")
UNKNOWN_VOCABULARY = "unknown"  # the vocabulary of models given ready-made


@dataclasses.dataclass(frozen=True)
class ReferenceFingerprint:
    """The fingerprint of the references a RefProbs was computed on.

    Attributes:
      tokens: a content hash of the reference token lists, image by image and reference by
        reference, in order (the same references in another order hash differently).
      vocabulary: the model's vocabulary, e.g. ``word-72`` (its kind and size).
      vocabulary_fingerprint: a content hash of that vocabulary's tokens and ids.
      units: what a position is: ``word`` (a word and the end token) or ``token`` (a piece).
    """

    tokens: str
    vocabulary: str
    vocabulary_fingerprint: str
    units: str = "word"

    def difference(self, other: ReferenceFingerprint) -> str | None:
        """How ``other`` (a model's numbers) differs from these references (the search's), and how to
        fix it, in one sentence; None when it matches.

        A vocabulary ``unknown`` here (a search of models given ready-made) matches any vocabulary.
        """
        if other.units != self.units:
            fix = ("combine each word's pieces into one position with RefProbs.to_words(word_starts)"
                   if self.units == "word" else "compute it at the model's pieces (units 'token')")
            return f"its positions are {other.units}s, the search's are {self.units}s: {fix}"
        if self.vocabulary != UNKNOWN_VOCABULARY and (other.vocabulary, other.vocabulary_fingerprint) != (
                self.vocabulary, self.vocabulary_fingerprint):
            attach = ("pregen_jax.external.attach_search_fingerprint(ref_probs, 'refs.jsonl') attaches the "
                      "search's fingerprint, from the match file pregen-search export-references writes beside "
                      "refs.jsonl (with the vocabulary's tokens)")
            if other.vocabulary == UNKNOWN_VOCABULARY:
                return (f"it does not say which vocabulary its model reads, and the search's models read "
                        f"{self.vocabulary}: if the model reads that vocabulary, {attach}")
            if other.vocabulary == self.vocabulary:
                return (f"its vocabulary is another {self.vocabulary} (the same kind and size, other tokens: "
                        f"fingerprint {other.vocabulary_fingerprint}, the search's {self.vocabulary_fingerprint}): "
                        f"compute it with the search's vocabulary; {attach}")
            return (f"its model reads vocabulary {other.vocabulary}, the search's models read {self.vocabulary}: "
                    f"its numbers are not comparable; compute it with the search's vocabulary ({attach})")
        if other.tokens != self.tokens:
            return (f"it was computed on other references, or on the same in another order (fingerprint "
                    f"{other.tokens}, the search's {self.tokens}): score the references pregen-search "
                    "export-references writes, in that order")
        return None

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str) -> ReferenceFingerprint:
        try:
            fields = json.loads(text)
            return cls(**{f.name: str(fields[f.name]) for f in dataclasses.fields(cls)})
        except (ValueError, KeyError, TypeError) as err:
            raise ValueError(f"{where}: not a reference fingerprint ({type(err).__name__}: {err})") from None


def reference_fingerprint(captions, vocab, units: str = "word") -> ReferenceFingerprint:
    """The fingerprint of references ``captions[i][r]`` (token lists) read with ``vocab``
    (anything with ``tokens``, a list of the vocabulary's tokens in id order, and ``fingerprint()``;
    ``vocab.name`` when it has one, else ``word-<size>``)."""
    digest = hashlib.sha256()
    for refs in captions:
        digest.update(json.dumps([list(ref) for ref in refs]).encode("utf-8"))
        digest.update(b"\n")
    name = getattr(vocab, "name", None) or f"word-{len(vocab.tokens)}"
    return ReferenceFingerprint(digest.hexdigest()[:16], str(name), str(vocab.fingerprint()), units)


@dataclasses.dataclass(frozen=True)
class RefProbs:
    """What a model says about the reference captions, read in one teacher-forced pass.

    Attributes:
      probs: f32[I, R, T] probability the model gives the true token at each position.
      ranks: i32[I, R, T] how many vocabulary tokens the model scored higher than the
        true one (0 = the true token is the model's top choice).
      mask:  bool[I, R, T] real positions. A reference of m words has m+1 real positions
        (the end token included), left-aligned; an image may have fewer than R references,
        its missing references being all-False rows.

    Accepts numpy or jax arrays; validates on construction and raises ``ValueError``
    naming the image/reference at fault. ``source`` (optional) names the file or model the
    numbers came from so that errors can say where they came from.

    ``units`` says what a position is: ``"word"`` (a reference word, the unit of the post-gen
    metrics; the default) or ``"token"`` (one of the model's tokens, e.g. a BPE piece);
    ``vocabulary`` names the model's vocabulary (``word-72``, ``bpe-1000``) when known. With a
    word vocabulary the two units are the same positions. ``pieces`` holds the rule that takes
    pieces to words. ``references`` (optional) fingerprints the references and vocabulary the
    numbers were computed on (``ReferenceFingerprint``); ``save`` writes it and ``load`` reads it, so that
    a reader compares fingerprints.
    """

    probs: Array
    ranks: Array
    mask: Array
    source: str | None = None
    references: ReferenceFingerprint | None = None
    units: str = "word"
    vocabulary: str | None = None

    def __post_init__(self):
        probs = np.asarray(self.probs)
        ranks = np.asarray(self.ranks)
        mask = np.asarray(self.mask)
        where = f" in {self.source}" if self.source else ""
        if self.units not in UNITS:
            raise ValueError(f"RefProbs{where}: units must be one of {', '.join(UNITS)}, got {self.units!r}")
        if self.references is not None and self.references.units != self.units:
            # the fingerprint names what a position is, as the numbers do (pieces taken to words change both)
            object.__setattr__(self, "references", dataclasses.replace(self.references, units=self.units))
        if probs.ndim != 3:
            raise ValueError(f"RefProbs{where}: probs must be 3-D [images, refs, positions], got shape {probs.shape}")
        for name, arr in (("ranks", ranks), ("mask", mask)):
            if arr.shape != probs.shape:
                raise ValueError(f"RefProbs{where}: {name} has shape {arr.shape} but probs has {probs.shape}")
        if not np.issubdtype(probs.dtype, np.floating):
            raise ValueError(f"RefProbs{where}: probs must be floating point, got {probs.dtype}")
        if not np.issubdtype(ranks.dtype, np.integer):
            raise ValueError(f"RefProbs{where}: ranks must be integers, got {ranks.dtype}")
        if mask.dtype != np.bool_:
            raise ValueError(f"RefProbs{where}: mask must be bool, got {mask.dtype}")
        if probs.shape[0] == 0:
            raise ValueError(f"RefProbs{where}: no images")
        bad = ~np.isfinite(probs) & mask
        if bad.any():
            i, r, t = np.argwhere(bad)[0]
            raise ValueError(f"RefProbs{where}: image {i}, reference {r}, position {t}: probability is {probs[i, r, t]} (NaN or inf)")
        bad = ((probs < 0) | (probs > 1)) & mask
        if bad.any():
            i, r, t = np.argwhere(bad)[0]
            raise ValueError(f"RefProbs{where}: image {i}, reference {r}, position {t}: probability {probs[i, r, t]} is outside [0, 1]")
        bad = (ranks < 0) & mask
        if bad.any():
            i, r, t = np.argwhere(bad)[0]
            raise ValueError(f"RefProbs{where}: image {i}, reference {r}, position {t}: negative rank {ranks[i, r, t]}")
        lengths = mask.sum(-1)
        # Left-aligned: position t is real only if t < length.
        aligned = np.arange(mask.shape[-1]) < lengths[..., None]
        if (aligned != mask).any():
            i, r = np.argwhere((aligned != mask).any(-1))[0]
            raise ValueError(f"RefProbs{where}: image {i}, reference {r}: mask is not a left-aligned run of real positions")
        has_ref = lengths > 0
        no_ref = ~has_ref.any(-1)
        if no_ref.any():
            i = int(np.argmax(no_ref))
            raise ValueError(f"RefProbs{where}: image {i} has no reference (every reference needs at least one position, the end token)")
        # Missing references must come after the real ones, so that R-padding is uniform.
        ref_aligned = np.arange(mask.shape[1]) < has_ref.sum(-1, keepdims=True)
        if (ref_aligned != has_ref).any():
            i, r = np.argwhere(ref_aligned != has_ref)[0]
            raise ValueError(f"RefProbs{where}: image {i}, reference {r} has no positions but a later reference does "
                             "(every reference needs at least one position; pad missing references at the end)")

    @property
    def num_images(self) -> int:
        return int(np.shape(self.probs)[0])

    @property
    def ref_mask(self) -> np.ndarray:
        """bool[I, R]: which references exist."""
        return np.asarray(self.mask).any(-1)

    @property
    def lengths(self) -> np.ndarray:
        """i32[I, R]: real positions per reference (m+1; 0 for a missing reference)."""
        return np.asarray(self.mask).sum(-1)

    def check_references(self, captions, image_ids=None, where: str | None = None) -> None:
        """Raise ``ValueError`` unless these arrays hold exactly the references ``captions``.

        captions[i][r]: the token list of reference r of image i, in the corpus's order. Checks
        the number of images, of references per image, and each reference's length (its
        tokens + 1, for the end token); the error names ``where`` (the model), the image and
        the reference.
        """
        where = where or self.source or "RefProbs"
        name = (lambda i: f"image {i} ({image_ids[i]})") if image_ids is not None else (lambda i: f"image {i}")
        if self.num_images != len(captions):
            raise ValueError(f"{where}: {self.num_images} images, but the test split has {len(captions)}")
        lengths = self.lengths
        for i, refs in enumerate(captions):
            have = int((lengths[i] > 0).sum())
            if have != len(refs):
                raise ValueError(f"{where}: {name(i)} has {have} references, but the corpus has {len(refs)}")
            for r, tokens in enumerate(refs):
                if lengths[i, r] != len(tokens) + 1:
                    raise ValueError(f"{where}: {name(i)}, reference {r} has {lengths[i, r]} positions, but the "
                                     f"corpus reference has {len(tokens)} tokens (+1 for the end token = "
                                     f"{len(tokens) + 1}): {self._length_cause(captions)}")

    def _length_cause(self, captions) -> str:
        """The likely cause of references of the wrong length: subword pieces, or another order."""
        lengths = self.lengths
        longer = all(lengths[i, r] >= len(tokens) + 1 for i, refs in enumerate(captions) for r, tokens in enumerate(refs))
        if self.units == "token" or longer:
            return ("a tokenization problem: the positions must be the corpus's alnum-lower words then the end token; "
                    "a model's subword pieces become words with RefProbs.from_log_probs(..., word_starts=...)")
        return "images or references in another order, or another tokenization?"

    def take(self, image_indices) -> RefProbs:
        """The same references for a subset of images (numpy indexing on axis 0)."""
        idx = np.asarray(image_indices)
        return RefProbs(np.asarray(self.probs)[idx], np.asarray(self.ranks)[idx], np.asarray(self.mask)[idx], self.source,
                        units=self.units, vocabulary=self.vocabulary)

    def save(self, path) -> None:
        """Write the documented ``.npz`` format: arrays ``probs``, ``ranks``, ``mask``, and with a
        fingerprint ``references`` (a 0-d string array holding ``ReferenceFingerprint`` as JSON)."""
        extra = {"references": np.array(self.references.to_json())} if self.references is not None else {}
        extra["units"] = np.array(self.units)
        if self.vocabulary is not None:
            extra["vocabulary"] = np.array(str(self.vocabulary))
        np.savez_compressed(path, probs=np.asarray(self.probs), ranks=np.asarray(self.ranks), mask=np.asarray(self.mask),
                            **extra)

    @classmethod
    def load(cls, path, allow_zero: bool = False) -> RefProbs:
        """Read a ``.npz`` with arrays ``probs`` f[I,R,T], ``ranks`` int[I,R,T], ``mask`` bool[I,R,T].

        Stricter than the constructor: a probability of exactly 0 at a real position is an
        error here (unless ``allow_zero``), since a file from another framework holding one
        has lost precision.
        """
        from . import io
        arrays = io.load_npz(path, "RefProbs file", names=("probs", "ranks", "mask"))
        references = None
        if "references" in arrays:
            stored = arrays["references"]
            if stored.shape != () or stored.dtype.kind != "U":
                raise ValueError(f"{path}: array 'references' must be one string (a reference fingerprint), "
                                 f"got {stored.dtype} of shape {stored.shape}")
            references = ReferenceFingerprint.from_json(str(stored), f"{path}: array 'references'")
        labels = {}
        for name in ("units", "vocabulary"):
            if name in arrays:
                stored = arrays[name]
                if stored.shape != () or stored.dtype.kind != "U":
                    raise ValueError(f"{path}: array {name!r} must be one string, got {stored.dtype} of shape "
                                     f"{stored.shape}")
                labels[name] = str(stored)
        ref_probs = cls(arrays["probs"], arrays["ranks"], arrays["mask"], source=str(path), references=references,
                        **labels)
        zero = (np.asarray(ref_probs.probs) == 0) & np.asarray(ref_probs.mask)
        if zero.any() and not allow_zero:
            i, r, t = np.argwhere(zero)[0]
            raise ValueError(f"{path}: image {i}, reference {r}, position {t}: probability is 0, which a softmax "
                             "never gives (an underflow?): store probabilities as float64, or from log-probabilities")
        return ref_probs

    @classmethod
    def from_lists(cls, probs, ranks, source=None) -> RefProbs:
        """Pad ragged nested lists ``probs[i][r][t]``, ``ranks[i][r][t]`` into a RefProbs."""
        num_images = len(probs)
        max_refs = max((len(refs) for refs in probs), default=0)
        max_len = max((len(ref) for refs in probs for ref in refs), default=0)
        p = np.zeros((num_images, max_refs, max_len), np.float64)
        k = np.zeros((num_images, max_refs, max_len), np.int32)
        m = np.zeros((num_images, max_refs, max_len), bool)
        for i, refs in enumerate(probs):
            for r, ref in enumerate(refs):
                n = len(ref)
                p[i, r, :n] = ref
                k[i, r, :n] = ranks[i][r]
                m[i, r, :n] = True
        return cls(p, k, m, source)

    @classmethod
    def from_log_probs(cls, log_probs, targets, word_starts=None, logits: bool = False, source: str | None = None,
                       *, vocabulary: str | None = None) -> RefProbs:
        """From any framework's next-token distributions, one reference at a time.

        log_probs[i][r]: f[T, V] the log-probabilities (or, with ``logits``, the raw scores, to
          which a log-softmax is applied) of the next token at each of the T positions of
          reference r of image i; anything ``np.asarray`` reads (numpy, torch on CPU, jax, any
          object with ``__array__``), from lists or any iterable: only one reference's array is
          held at a time, so a generator keeps memory at one [T, V] array.
        targets[i][r]: i[T] the token ids read: the reference's tokens, then the end token.
        word_starts[i][r]: optional bool[T], True where a word begins (the end token is its own
          word). Without it the result is at token level (``units = "token"``: one position per
          token, which is a word when the model's tokens are words); with it at word level, by
          the rule in ``pieces`` (a word's probability is the product of its pieces', its rank
          the largest of theirs).

        A token's rank counts the vocabulary entries with a strictly higher score. Raises
        ``ValueError`` naming image and reference for a bad shape, an id outside the
        vocabulary or a length that does not match (a tokenization problem).
        """
        from . import pieces
        return cls(**pieces.from_log_probs(log_probs, targets, word_starts, logits, source, vocabulary))

    @classmethod
    def from_token_scores(cls, target_log_probs, ranks, word_starts=None, source: str | None = None,
                          *, vocabulary: str | None = None) -> RefProbs:
        """From the two numbers per position a user computes inside their own framework.

        target_log_probs[i][r]: f[T] the log-probability of the true token at each position
        (the reference's tokens, then the end token); ranks[i][r]: i[T] how many vocabulary
        entries score strictly higher; word_starts[i][r]: optional bool[T] as in
        ``from_log_probs`` (word level when given, token level otherwise).
        """
        from . import pieces
        return cls(**pieces.from_token_scores(target_log_probs, ranks, word_starts, source, vocabulary))

    def to_words(self, word_starts, vocabulary: str | None = None) -> RefProbs:
        """This token-level RefProbs at word level; word_starts: bool[I, R, T] (see ``pieces``)."""
        from . import pieces
        if self.units != "token":
            raise ValueError(f"{self.source or 'RefProbs'}: already at {self.units} level")
        return pieces.to_word_units(self, word_starts, vocabulary)
