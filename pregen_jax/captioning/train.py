"""Training caption generators: optax Adam, length-bucketed minibatches, early stopping on
validation perplexity or a pre-gen metric (``criteria``), a checkpoint each epoch (atomic),
resume, and snapshots."""
from __future__ import annotations

import dataclasses
import functools
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pydantic
from flax import serialization

from ..datasets import Vocabulary
from ..settings import PositiveFloat, PositiveInt, as_dict, settings, validation_message
from ..training import checkpoints, loop
from . import criteria, decode, registry
from .evaluate import perplexity, reference_probs
from .input_pipeline import encode_references, training_batch, training_batches
from .models import Captioner, with_feature_mean


@settings
class TrainConfig:
    """How to train one caption generator."""

    epochs: PositiveInt = 10                  # at most this many epochs
    batch_size: PositiveInt = 128             # captions per minibatch
    learning_rate: PositiveFloat = 1e-3       # Adam, as in 2018
    patience: PositiveInt = 2                 # stop after this many epochs without a better select_by value
    snapshot_epochs: list[PositiveInt] = dataclasses.field(default_factory=list)  # also keep these epochs' parameters
    select_by: str = criteria.PERPLEXITY      # keep the best epoch and stop early by "perplexity" or a pre-gen metric
    direction: criteria.Direction = "auto"    # select_by's better values: "higher", "lower", or inferred from its tiers
    monitor: list[str] = dataclasses.field(default_factory=list)  # more pre-gen metrics to log each epoch

    @pydantic.model_validator(mode="after")
    def _snapshots_within_epochs(self):
        late = [e for e in self.snapshot_epochs if e > self.epochs]
        if late:
            raise ValueError(f"snapshot_epochs {late} lie beyond epochs = {self.epochs}")
        return self

    @pydantic.model_validator(mode="after")
    def _known_criterion(self):
        self.criterion  # noqa: B018  (validates the name and settles the direction)
        for name in self.monitor:
            criteria.parse_metric(name, "monitor")
        return self

    @property
    def criterion(self) -> criteria.Criterion:
        return criteria.Criterion.make(self.select_by, self.direction)

    @property
    def pregen_metrics(self) -> list[str]:
        """The pre-gen metrics computed each epoch: select_by (unless perplexity), then monitor."""
        chosen = [] if self.select_by == criteria.PERPLEXITY else [self.select_by]
        return list(dict.fromkeys(chosen + list(self.monitor)))

    def record(self) -> dict:
        """The settings as plain data, without the selection fields left at their defaults, so
        that checkpoints (and cache keys) made before those fields existed still match."""
        record = as_dict(self)
        for name, default in SELECTION_DEFAULTS.items():
            if record[name] == default:
                del record[name]
        return record


SELECTION_DEFAULTS = {"select_by": criteria.PERPLEXITY, "direction": "auto", "monitor": []}


@dataclasses.dataclass
class TrainedModel:
    """A trained caption model: the module, its parameters, and its training history."""

    model: Captioner
    params: dict
    history: list[dict]
    path: Path | None = None


@functools.lru_cache(maxsize=32)
def adam_train_step(model: Captioner, learning_rate: float):
    """``make_train_step`` with Adam, one per (model, learning rate): runs that differ only in
    their seed share the compiled step (compiling it per length bucket costs more than an
    epoch on small data)."""
    return make_train_step(model, optax.adam(learning_rate))


def make_train_step(model: Captioner, optimizer):
    """The jit-compiled step: (params, opt_state, rng, features, inputs, targets, weights) -> (params, opt_state, loss)."""
    @jax.jit
    def train_step(params, opt_state, rng, features, inputs, targets, weights):
        def loss_fn(p):
            logits = decode.teacher_forced_logits(model, p, features, inputs, train=True, rng=rng)
            losses = optax.softmax_cross_entropy_with_integer_labels(logits.astype(jnp.float32), targets)
            return jnp.sum(losses * weights) / jnp.sum(weights)
        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss
    return train_step


def val_perplexity(model, params, features, captions, vocab) -> float:
    """Per-token perplexity of the validation references (rare words read as <unk>, as in training)."""
    return perplexity(reference_probs(model, params, features, captions, vocab, progress=False, source="validation",
                                      warn_unknown=False))


def validate(model, params, features, captions, vocab, pregen_metrics) -> criteria.Validation:
    """Validation perplexity and the named pre-gen metrics from one teacher-forced pass, timed."""
    start = time.perf_counter()
    if not pregen_metrics:
        return criteria.Validation(val_perplexity(model, params, features, captions, vocab), {},
                                   time.perf_counter() - start)
    ref_probs = reference_probs(model, params, features, captions, vocab, progress=False, source="validation",
                                warn_unknown=False)
    return criteria.validation_from_ref_probs(ref_probs, pregen_metrics, start)


def init_params(model: Captioner, feature_size: int, seed: int):
    return model.init(jax.random.PRNGKey(seed), jnp.zeros((1, feature_size)), jnp.zeros((1,), jnp.int32))


# What a checkpoint must share with this run to be resumed (else a one-line error).
CHECKED_META = ("arch", "model_config", "train_config", "seed", "vocab_fingerprint", "feature_size")


def train_captioner(arch: str, model_config, train_config: TrainConfig, seed: int,
                    vocab: Vocabulary, train_features, train_captions, val_features, val_captions, workdir,
                    progress: bool = True, description: str = "", stop=None,
                    snapshot_every: int | None = None) -> TrainedModel:
    """Train (or resume, or load when finished) a caption generator in ``workdir`` (``model_config``: the
    sizes of its architecture's family, ``RnnConfig`` or ``TransformerConfig``).

    train_features: f32[N, D]; train_captions[n][r]: token lists (likewise for validation).
    Writes ``workdir/checkpoint.msgpack`` after every epoch, ``workdir/model.msgpack`` (the
    best parameters by ``train_config.select_by``, validation perplexity by default) at the
    end, and ``snapshot-epochN.msgpack`` for the chosen epochs. A matching checkpoint
    resumes; a mismatched one is an error. ``stop`` (a ``threading.Event``): when another thread
    sets it, training ends at the next step with ``training.loop.Stopped``. Each epoch's history entry holds the validation
    perplexity, every pre-gen metric asked for (by name) and ``eval_seconds``, the cost of
    that evaluation. ``snapshot_every``: also write ``snapshot-stepN.msgpack`` (the parameters after N
    optimisation steps, read by ``load_trained``) every that many steps, counted over all epochs.
    """
    workdir = Path(workdir)
    model = registry.make_model(arch, model_config, len(vocab))
    meta = {"arch": arch, "model_config": model_config.record(), "train_config": train_config.record(),
            "seed": seed, "vocab_size": len(vocab), "vocab_fingerprint": vocab.fingerprint(),
            "feature_size": int(train_features.shape[1])}
    final = workdir / "model.msgpack"
    if final.is_file():
        return load_trained(final, vocab)

    params = with_feature_mean(init_params(model, train_features.shape[1], seed), model_config, train_features)
    task = captioner_task(model, train_config, seed, vocab, train_captions, train_features, val_features,
                          val_captions, description)
    schedule = loop.Schedule(train_config.epochs, final.name, train_config.patience,
                             tuple(train_config.snapshot_epochs), loss_every=20, batch_size=train_config.batch_size,
                             rate_name="captions_per_s", description=description, stop=stop,
                             snapshot_every=snapshot_every)
    fitted = loop.fit(task, schedule, params, optax.adam(train_config.learning_rate), workdir, meta, CHECKED_META,
                      progress)
    return TrainedModel(model, fitted.params, fitted.history, fitted.path)


def captioner_task(model: Captioner, train_config: TrainConfig, seed: int, vocab: Vocabulary, train_captions,
                   train_features, val_features, val_captions, description: str = "") -> loop.Task:
    """What the fit loop needs of a caption generator: length-bucketed minibatches drawn from
    (seed, epoch), Adam steps with dropout keys from (seed, epoch, step), and the validation
    (perplexity and the pre-gen metrics asked for) that ``train_config.select_by`` chooses by."""
    pairs = [(n, ids) for n, _, ids in encode_references(train_captions, vocab, "training captions")]
    train_step = adam_train_step(model, train_config.learning_rate)
    train_features = np.asarray(train_features, np.float32)
    criterion, pregen_metrics = train_config.criterion, train_config.pregen_metrics

    def batches(epoch):
        return training_batches(pairs, train_config.batch_size, np.random.default_rng([seed, epoch]))

    def step(params, opt_state, batch, epoch, index):
        key = jax.random.fold_in(jax.random.PRNGKey(seed * 100003 + epoch), index)
        return train_step(params, opt_state, key, *training_batch(pairs, batch, train_features))

    def validation(params):
        result = validate(model, params, val_features, val_captions, vocab, pregen_metrics)
        return {"val_perplexity": result.perplexity, **result.pregen}, result.value(criterion.name)

    def line(epoch, record, best):
        result = criteria.Validation(record["val_perplexity"], {name: record[name] for name in pregen_metrics},
                                     record["eval_seconds"])
        return epoch_line(description, epoch, result, criterion.name, best)

    return loop.Task(batches, step, line, validation, criterion.improves)


def epoch_line(description: str, epoch: int, validation: criteria.Validation, select_by: str, best: bool) -> str:
    """``merge-1 epoch 3: val perplexity 4.210, mean_max_normcount_prefix0 0.6120 (best), eval 0.41 s``:
    "(best)" follows the value training selects by."""
    mark = " (best)" if best else ""
    parts = [f"val perplexity {validation.perplexity:.3f}{mark if select_by == criteria.PERPLEXITY else ''}"]
    parts += [f"{name} {value:.4g}{mark if name == select_by else ''}" for name, value in validation.pregen.items()]
    return f"{description} epoch {epoch}: {', '.join(parts)}, eval {validation.seconds:.2f} s".strip()


def load_trained(path, vocab: Vocabulary) -> TrainedModel:
    """A model saved by ``train_captioner`` (model.msgpack or a snapshot), checked against ``vocab``."""
    tree, meta = checkpoints.load(path)
    if meta.get("vocab_fingerprint") != vocab.fingerprint() or meta.get("vocab_size") != len(vocab):
        raise ValueError(f"{path}: the model was trained with a different vocabulary "
                         f"({meta.get('vocab_size')} tokens) than the one given ({len(vocab)} tokens)")
    try:
        family = registry.ARCHITECTURES.get(meta["arch"]).config
        model = registry.make_model(meta["arch"], family.from_record(meta["model_config"]), len(vocab))
        template = init_params(model, meta["feature_size"], 0)
        params = serialization.from_state_dict(template, tree["params"])
    except Exception as err:  # a foreign or older checkpoint: say which file, not where it broke
        why = validation_message(err, "model_config") if isinstance(err, pydantic.ValidationError) else f"{type(err).__name__}: {err}"
        raise ValueError(f"{path}: not a pregen-jax caption model checkpoint ({why})") from err
    return TrainedModel(model, params, meta.get("history", []), Path(path))
