"""Training the matching model (VSE++ hinge loss on the hardest negatives), resuming it, and
measuring it by image-caption retrieval.

Each epoch shows every training image once, with one of its references chosen at random, in
minibatches of distinct images (so no caption in a batch is a false negative for another image).
The loss (Faghri et al. 2018, "max violation") sums, over the positive pairs of a batch, the
hinge against the hardest negative caption and against the hardest negative image.

Warm-up: trained from scratch on the shapes dataset, the hardest-negative loss sat at its
collapsed value (every score equal, loss = 2 x batch x margin) for 300 steps, while the hinge
averaged over all negatives started learning at once; so the first ``warmup_epochs`` use the
latter (VSE++'s own remedy for its loss with untrained encoders) and the rest the hardest negatives.

``loss="infonce"`` instead: the symmetric contrastive loss over all negatives of the batch
(CLIP's), scores divided by a learned temperature (a ``temperature`` entry of the parameters,
log of its inverse; the matchers read only ``params["params"]``).

False negatives: a caption of the shapes data is often true of other images of its batch.
Given ``truth(images, captions) -> bool[B, B]`` (from the generator's logical forms, see
``truth.py``) and ``mask_false_negatives``, those pairs are left out of either loss.
"""
from __future__ import annotations

import dataclasses
import functools
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import serialization

from .. import io
from ..datasets import Vocabulary
from ..training import checkpoints, loop
from .attention import pair_scores
from .model import MatcherConfig, ScanMatcher, encode_captions, encode_regions, map_chunks, pad_token_ids

RECALL_AT = (1, 5, 10)

MATCHER_FILE = "matcher.msgpack"  # the trained matcher, in its workdir and in a scorer folder


@dataclasses.dataclass(frozen=True)
class MatchTrainConfig:
    """How to train the matching model."""

    epochs: int = 20              # passes over the training images
    batch_size: int = 128         # images (each with one reference) per minibatch
    learning_rate: float = 2e-4   # Adam, as SCAN
    margin: float = 0.2           # hinge margin, as SCAN/VSE++
    grad_clip: float = 2.0        # global-norm clipping, as SCAN
    warmup_epochs: int = 2        # epochs of the hinge averaged over all negatives before the hardest ones
    val_images: int = 200         # validation retrieval (sum of recalls) on this many images each epoch
    seed: int = 0
    loss: str = "hinge"           # "hinge" (VSE++ hardest negatives after the warm-up) or "infonce"
    temperature: float = 0.07     # InfoNCE's starting temperature (then learned)
    mask_false_negatives: bool = False  # leave pairs whose caption is true of the image out of the loss

    def __post_init__(self):
        if self.loss not in ("hinge", "infonce"):
            raise ValueError(f"loss must be 'hinge' or 'infonce', not {self.loss!r}")


@dataclasses.dataclass
class TrainedMatcher:
    matcher: ScanMatcher
    params: dict
    history: list[dict]
    path: Path | None = None


def _not_negative(scores, true_of=None):
    """bool[B, B]: pairs that are no negative: the diagonal, and where given ``true_of`` [i, c]."""
    eye = jnp.eye(scores.shape[0], dtype=bool)
    return eye if true_of is None else eye | true_of


def _hinge_costs(scores, margin: float, true_of=None):
    """Hinge cost of every negative of a square score matrix f[B, B] with the positives on its diagonal:
    (negative captions of image i: f[B, B] by [i, c], negative images of caption c: f[B, B] by [i, c]).
    Pairs where ``true_of`` bool[B, B] (caption c is true of image i) are no negatives: cost 0."""
    positive = jnp.diag(scores)
    skip = _not_negative(scores, true_of)
    cost_caption = jnp.where(skip, 0.0, jnp.maximum(0.0, margin + scores - positive[:, None]))
    cost_image = jnp.where(skip, 0.0, jnp.maximum(0.0, margin + scores - positive[None, :]))
    return cost_caption, cost_image


def hardest_negative_loss(scores, margin: float, true_of=None):
    """VSE++ loss: for each positive pair, the hinge of its hardest negative caption and image, summed."""
    cost_caption, cost_image = _hinge_costs(scores, margin, true_of)
    return jnp.sum(jnp.max(cost_caption, axis=1)) + jnp.sum(jnp.max(cost_image, axis=0))


def all_negatives_loss(scores, margin: float, true_of=None):
    """The hinge averaged over all negatives of each positive pair, summed over the pairs (warm-up)."""
    cost_caption, cost_image = _hinge_costs(scores, margin, true_of)
    return (jnp.sum(cost_caption) + jnp.sum(cost_image)) / max(scores.shape[0] - 1, 1)


def infonce_loss(scores, log_inverse_temperature, true_of=None):
    """Symmetric InfoNCE (CLIP's): mean over the batch of the cross-entropy of each image over the
    captions and of each caption over the images, logits = scores / temperature; pairs where
    ``true_of`` are left out of the softmax (the positive itself stays)."""
    logits = scores * jnp.exp(log_inverse_temperature)
    drop = _not_negative(scores, true_of) & ~jnp.eye(scores.shape[0], dtype=bool)
    logits = jnp.where(drop, -jnp.inf, logits)
    diagonal = jnp.diag(logits)
    per_image = jax.nn.logsumexp(logits, axis=1) - diagonal
    per_caption = jax.nn.logsumexp(logits, axis=0) - diagonal
    return (jnp.mean(per_image) + jnp.mean(per_caption)) / 2


@functools.partial(jax.jit, static_argnames=("matcher", "config", "hardest"))
def train_step(params, opt_state, regions, ids, lengths, true_of=None, *, matcher, config: MatchTrainConfig,
               hardest: bool):
    """One Adam step on a batch of B images and their B captions (caption n belongs to image n);
    ``true_of`` bool[B, B] [i, c]: caption c is true of image i (left out of the loss), or None.

    Static arguments are hashed by value, so every training run with the same settings reuses
    one compiled step.
    """
    def loss_fn(p):
        model = {"params": p["params"]}
        v = matcher.encode_regions(model, regions)
        h, mask = matcher.encode_words(model, ids, lengths)
        scores = pair_scores(v, h, mask, matcher.config.lam)
        if config.loss == "infonce":
            return infonce_loss(scores, p["temperature"], true_of)
        return (hardest_negative_loss if hardest else all_negatives_loss)(scores, config.margin, true_of)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    updates, opt_state = make_optimizer(config).update(grads, opt_state, params)
    return optax.apply_updates(params, updates), opt_state, loss


def make_optimizer(config: MatchTrainConfig):
    return optax.chain(optax.clip_by_global_norm(config.grad_clip), optax.adam(config.learning_rate))


def _meta(matcher: ScanMatcher, config: MatchTrainConfig, region_size: int) -> dict:
    return {"matcher_config": dataclasses.asdict(matcher.config), "train_config": dataclasses.asdict(config),
            "vocab_fingerprint": matcher.vocab.fingerprint(), "vocab_tokens": matcher.vocab.tokens,
            "region_size": region_size}


# What a checkpoint must share with this run to be resumed (else a one-line error).
CHECKED_META = ("matcher_config", "train_config", "vocab_fingerprint", "region_size")


def _epoch_batches(captions, batch_size: int, rng) -> list[tuple[np.ndarray, list[list[str]], np.ndarray]]:
    """(images, their picked captions, which reference each is) per batch; same draws as before."""
    order = rng.permutation(len(captions))
    which = [int(rng.integers(len(captions[n]))) for n in order]
    picks = [captions[n][r] for n, r in zip(order, which)]
    which = np.array(which)
    return [(order[s:s + batch_size], picks[s:s + batch_size], which[s:s + batch_size])
            for s in range(0, len(order) - batch_size + 1, batch_size)]


def train_matcher(config: MatcherConfig, train_config: MatchTrainConfig, vocab: Vocabulary, regions: np.ndarray,
                  captions, workdir, val_regions=None, val_captions=None, progress: bool = True,
                  train_truth=None, val_truth=None) -> TrainedMatcher:
    """Train (or resume, or load when finished) the matching model in ``workdir``.

    regions f[I, K, Dr] of the training images; ``captions[n][r]`` token lists. Writes
    ``workdir/checkpoint.msgpack`` after every epoch (atomic) and ``workdir/matcher.msgpack``
    at the end: the parameters of the epoch with the best validation recall sum when
    validation data is given, else of the last epoch. A mismatched checkpoint is a ValueError.

    ``train_truth(images i[B], picks [(image, reference)]) -> bool[B, B]``: which batch captions
    are true of which batch images (needed by ``mask_false_negatives``); ``val_truth`` bool[C, I]
    over the validation captions (flattened in order) and images: then the best epoch is the one
    with the best ambiguity-aware recall sum.
    """
    if train_config.mask_false_negatives and train_truth is None:
        raise ValueError("mask_false_negatives needs train_truth (which captions are true of which images)")
    if regions.shape[-1] != config.region_size:
        raise ValueError(f"regions have {regions.shape[-1]} features but the matcher expects {config.region_size}")
    if len(regions) < train_config.batch_size:
        raise ValueError(f"{len(regions)} training images, fewer than one batch of {train_config.batch_size}")
    workdir = Path(workdir)
    matcher = ScanMatcher(config, vocab)
    meta = _meta(matcher, train_config, int(regions.shape[-1]))
    final = workdir / MATCHER_FILE
    if final.is_file():
        checkpoints.check_meta(final, checkpoints.load(final)[1], meta, CHECKED_META)
        return load_matcher(final, vocab)
    task = matcher_task(matcher, train_config, regions, captions, val_regions, val_captions, train_truth, val_truth)
    schedule = loop.Schedule(train_config.epochs, final.name, description="matcher")
    params = matcher.init(train_config.seed, regions)
    if train_config.loss == "infonce":
        params = {**params, "temperature": jnp.asarray(-np.log(train_config.temperature), jnp.float32)}
    fitted = loop.fit(task, schedule, params, make_optimizer(train_config), workdir, meta, CHECKED_META, progress)
    return TrainedMatcher(matcher, fitted.params, fitted.history, fitted.path)


def matcher_task(matcher: ScanMatcher, train_config: MatchTrainConfig, regions: np.ndarray, captions,
                 val_regions=None, val_captions=None, train_truth=None, val_truth=None) -> loop.Task:
    """What the fit loop needs of the matching model: batches of distinct images with one
    reference each, drawn from (seed, epoch); hinge steps (all negatives for the warm-up epochs,
    then the hardest) or InfoNCE steps, false negatives masked when asked; and, given validation
    data, the retrieval recall sum the best epoch is chosen by (ambiguity-aware given ``val_truth``)."""
    regions = np.asarray(regions, np.float32)
    width = -(-max(len(t) for refs in captions for t in refs) // 8) * 8  # one width: one compilation

    def batches(epoch):
        return _epoch_batches(captions, train_config.batch_size, np.random.default_rng([train_config.seed, epoch]))

    def step(params, opt_state, batch, epoch, index):
        images, picked, which = batch
        ids, lengths = pad_token_ids(picked, matcher.vocab, "training captions", width)
        true_of = None
        if train_config.mask_false_negatives:
            true_of = jnp.asarray(train_truth(images, which))
        return train_step(params, opt_state, regions[images], ids, lengths, true_of, matcher=matcher,
                          config=train_config, hardest=epoch > train_config.warmup_epochs)

    def validate(params):
        from .retrieval import recall_sum, retrieval_measures
        count = min(train_config.val_images, len(val_regions))
        flat = [tokens for refs in val_captions[:count] for tokens in refs]
        owner = np.array([n for n, refs in enumerate(val_captions[:count]) for _ in refs])
        scores = similarity_matrix(matcher, params, val_regions[:count], flat)
        truth = None if val_truth is None else np.asarray(val_truth)[:len(flat), :count]
        measures = retrieval_measures(scores, owner, truth)
        record = {"val_rsum": recall_sum(measures),
                  **{f"val_map_plain_{d[:5]}": m["map_plain"] for d, m in measures.items()}}
        if truth is not None:
            record["val_rsum_ambiguous"] = recall_sum(measures, "recall_ambiguous")
            record.update({f"val_map_{d[:5]}": m["map"] for d, m in measures.items()})
        if "temperature" in params:
            record["temperature"] = float(np.exp(-np.asarray(params["temperature"])))
        return record, record.get("val_rsum_ambiguous", record["val_rsum"])

    def line(epoch, record, best):
        return (f"matcher epoch {epoch}: loss {record['train_loss']:.3f}"
                + (f", val recall sum {record['val_rsum']:.3f}" if "val_rsum" in record else "")
                + (f", ambiguity-aware {record['val_rsum_ambiguous']:.3f}" if "val_rsum_ambiguous" in record else ""))

    return loop.Task(batches, step, line, validate if val_regions is not None else None)


def load_matcher(path, vocab: Vocabulary | None = None) -> TrainedMatcher:
    """A matcher saved by ``train_matcher``; its vocabulary travels in the file (checked against ``vocab``)."""
    tree, meta = checkpoints.load(path)
    try:
        saved_vocab = Vocabulary(meta["vocab_tokens"][2:])
        config = MatcherConfig(**meta["matcher_config"])
    except (KeyError, TypeError) as err:
        raise ValueError(f"{path}: not a matcher checkpoint ({err})") from err
    if vocab is not None and vocab.fingerprint() != saved_vocab.fingerprint():
        raise ValueError(f"{path}: the matcher was trained with a different vocabulary "
                         f"({len(saved_vocab)} tokens) than the one given ({len(vocab)} tokens)")
    matcher = ScanMatcher(config, saved_vocab)
    try:
        template = matcher.init(0)
        if "temperature" in tree["params"]:  # trained with InfoNCE: its learned temperature travels along
            template = {**template, "temperature": np.zeros((), np.float32)}
        params = serialization.from_state_dict(template, tree["params"])
    except Exception as err:
        raise ValueError(f"{path}: parameters do not fit the matcher config ({err})") from err
    return TrainedMatcher(matcher, params, meta.get("history", []), Path(path))


# ------------------------------------------------------------------------ retrieval


@functools.partial(jax.jit, static_argnums=(3,))
def _scores(regions, words, mask, lam):
    return pair_scores(regions, words, mask, lam)


def similarity_matrix(matcher, params, regions: np.ndarray, captions: list[list[str]], lam: float | None = None,
                      chunk: int = 100) -> np.ndarray:
    """f32[I, C]: the matcher's score (SCAN, mean over regions) of every image with every caption."""
    lam = matcher.config.lam if lam is None else lam
    v = encode_regions(matcher, params, regions)
    h, mask = encode_captions(matcher, params, captions, "retrieval captions")
    out = np.zeros((len(regions), len(captions)), np.float32)
    step = chunk * 5
    for c in range(0, len(captions), step):
        part = slice(c, c + step)
        scores = map_chunks(lambda r, words=h[part], m=mask[part]: _scores(r, words, m, lam), (v,), chunk)
        out[:, part] = np.asarray(scores)
    return out


def recalls_from_scores(scores: np.ndarray, caption_image: np.ndarray, ks=RECALL_AT) -> dict[str, dict[int, float]]:
    """Recall at k as fractions, both directions, from scores f[I, C] and the image of each caption i[C].

    image_to_caption: an image hits when any of its own captions ranks in the top k;
    caption_to_image: a caption hits when its image ranks in the top k. Ties count against.
    """
    images = np.arange(scores.shape[0])
    own = caption_image[None, :] == images[:, None]
    best_own = np.where(own, scores, -np.inf).max(axis=1)
    image_rank = (np.where(own, -np.inf, scores) >= best_own[:, None]).sum(axis=1)
    true_score = scores[caption_image, np.arange(scores.shape[1])]
    caption_rank = (scores >= true_score[None, :]).sum(axis=0) - 1
    return {"image_to_caption": {k: float(np.mean(image_rank < k)) for k in ks},
            "caption_to_image": {k: float(np.mean(caption_rank < k)) for k in ks}}


def retrieval_recalls(matcher, params, regions: np.ndarray, captions) -> dict[str, dict[int, float]]:
    """Recall at 1/5/10 of image-to-caption and caption-to-image retrieval; ``captions[n][r]`` token lists."""
    flat = [tokens for refs in captions for tokens in refs]
    owner = np.array([n for n, refs in enumerate(captions) for _ in refs])
    return recalls_from_scores(similarity_matrix(matcher, params, regions, flat), owner)


def write_retrieval(recalls: dict[str, dict[int, float]], path) -> None:
    """retrieval.tsv: direction, recall_at_1, recall_at_5, recall_at_10."""
    lines = ["direction\t" + "\t".join(f"recall_at_{k}" for k in RECALL_AT)]
    lines += [f"{direction}\t" + "\t".join(f"{r[k]:.4f}" for k in RECALL_AT) for direction, r in recalls.items()]
    io.write_text("\n".join(lines) + "\n", path)
