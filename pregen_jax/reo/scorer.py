"""REO as a post-gen metric: one object that holds the shared space and the covariance and
scores the generated captions of a split.

    scorer = fit_scorer(vocab, train_regions, train.captions, workdir, val_regions, val.captions)
    per_image = scorer.score(test_regions, generated, test.captions)   # f64[I] arrays
    corpus = scorer.corpus_scores(test_regions, generated, test.captions)  # means over images

On the built-in shapes data, ``fit_shapes_scorer`` is the default: a learned detector's object
regions and an InfoNCE matcher trained with the false negatives left out (the best of the
region kinds a search can make from image features, experiments/reo_shapes/README.md);
``scorer.regions_from_features`` turns the encoder's grid maps into its regions. Other data
brings its own regions and any ``Matcher`` (``fit_scorer``, or ``ReoScorer(...)`` directly).
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from .. import io
from ..datasets import TOKENIZER_NAME, Vocabulary
from .attention import LAMBDA
from .model import Matcher, MatcherConfig
from .regions import DetectorConfig, RegionDetector, load_detector, regions_of, save_detector, train_detector
from .scores import Covariance, estimate_covariance, score_captions
from .train import MATCHER_FILE, MatchTrainConfig, load_matcher, train_matcher

# The files of a scorer folder (``save_scorer`` writes them, ``load_scorer`` and the REO post-gen
# metric read them): the matcher, the covariance matrix and its facts, and for learned regions the detector.
COVARIANCE_FILE, FACTS_FILE = "covariance.npz", "covariance.json"
SCORER_FILES = (MATCHER_FILE, COVARIANCE_FILE, FACTS_FILE)
DETECTOR_FILE = "detector.msgpack"  # in a scorer folder whose regions are "learned"
METRIC_NAMES = ("REO_R_image", "REO_E_image", "REO_O_image", "REO_R_refs", "REO_E_refs", "REO_O_refs")


@dataclasses.dataclass
class ReoScorer:
    """A matcher (any ``Matcher``), its parameters, the Mahalanobis covariance and lambda."""

    matcher: Matcher
    params: dict
    covariance: Covariance
    lam: float = LAMBDA
    tokenizer: str = TOKENIZER_NAME  # the references and candidates must be tokenised this way
    regions: str = "grid"            # how image features become regions: "grid" cells or "learned" object boxes
    detector: RegionDetector | None = None  # the "learned" regions' detector

    def regions_from_features(self, features: np.ndarray) -> np.ndarray:
        """Region features f[I, K, Dr] from the shapes encoder's flattened grid maps f[I, 36 * C]
        (already made regions f[I, K, Dr] are returned as they are)."""
        features = np.asarray(features, np.float32)
        if features.ndim == 3:
            return features
        return regions_of(self.regions, features, detector=self.detector)

    def score(self, regions: np.ndarray, candidates: list[list[str]], references) -> dict[str, np.ndarray]:
        """Per-image R/E/O against the image and against the references: f64[I] arrays keyed
        R_image, E_image, O_image, R_refs, E_refs, O_refs (see ``scores.score_captions``)."""
        return score_captions(self.matcher, self.params, regions, candidates, references, self.covariance, self.lam)

    def corpus_scores(self, regions: np.ndarray, candidates: list[list[str]], references) -> dict[str, float]:
        """Mean over images of each score, keyed REO_R_image ... REO_O_refs."""
        per_image = self.score(regions, candidates, references)
        return {f"REO_{key}": float(values.mean()) for key, values in per_image.items()}


def fit_scorer(vocab: Vocabulary, train_regions: np.ndarray, train_captions, workdir, val_regions=None,
               val_captions=None, matcher_config: MatcherConfig | None = None,
               train_config: MatchTrainConfig | None = None, covariance: str = "ledoit-wolf",
               progress: bool = True) -> ReoScorer:
    """Train (or resume, or load) the matching model in ``workdir`` and estimate the covariance.

    train_regions f[I, K, Dr]; ``covariance``: "ledoit-wolf" (from training references' context
    vectors) or "identity" (Euclidean distance).
    """
    if covariance not in ("ledoit-wolf", "identity"):
        raise ValueError(f"covariance must be 'ledoit-wolf' or 'identity', not {covariance!r}")
    matcher_config = matcher_config or MatcherConfig(region_size=int(train_regions.shape[-1]))
    trained = train_matcher(matcher_config, train_config or MatchTrainConfig(), vocab, train_regions, train_captions,
                            workdir, val_regions, val_captions, progress)
    if covariance == "identity":
        cov = Covariance.identity(matcher_config.joint_size)
    else:
        cov = estimate_covariance(trained.matcher, trained.params, train_regions, train_captions)
    return ReoScorer(trained.matcher, trained.params, cov)


def fit_shapes_scorer(vocab: Vocabulary, train, val, scenes: dict, forms: dict, workdir,
                      matcher_config: MatcherConfig | None = None, train_config: MatchTrainConfig | None = None,
                      detector_config: DetectorConfig | None = None, progress: bool = True) -> ReoScorer:
    """The default scorer for the built-in shapes data (experiments/reo_shapes measured it best among
    the deployable ones): object regions from a detector trained on the training split's boxes,
    and the matcher trained with InfoNCE, the captions true of other batch images left out of the loss.

    ``train``/``val``: splits with ``features`` (the shapes encoder's grid maps); ``scenes`` and
    ``forms`` (``datasets.shapes.load_scenes`` / ``load_reference_forms``) for "train" and "val".
    The detector is saved in ``workdir/detector.msgpack`` and reloaded from there.
    """
    from .truth import batch_truth, truth_matrix
    workdir = Path(workdir)
    detector_path = workdir / DETECTOR_FILE
    if detector_path.is_file():
        detector = load_detector(detector_path)
    else:
        detector = train_detector(train.features, scenes["train"], detector_config or DetectorConfig())
        save_detector(detector, detector_path)
    train_regions = regions_of("learned", train.features, detector=detector)
    val_regions = regions_of("learned", val.features, detector=detector)
    matcher_config = matcher_config or MatcherConfig(region_size=int(train_regions.shape[-1]))
    train_config = train_config or MatchTrainConfig(epochs=24, learning_rate=1e-3, loss="infonce",
                                                    mask_false_negatives=True)  # 24: README, "Longer training"
    val_truth = truth_matrix([f for fs in forms["val"] for f in fs], scenes["val"])
    trained = train_matcher(matcher_config, train_config, vocab, train_regions, train.captions, workdir / "matcher",
                            val_regions, val.captions, progress, train_truth=batch_truth(forms["train"], scenes["train"]),
                            val_truth=val_truth)
    covariance = estimate_covariance(trained.matcher, trained.params, train_regions, train.captions)
    return ReoScorer(trained.matcher, trained.params, covariance, regions="learned", detector=detector)


def save_scorer(scorer: ReoScorer, matcher_path, folder, image_features: str, regions: str | None = None,
                detector: RegionDetector | None = None) -> None:
    """Make ``folder`` a REO scorer for searches (``[postgen] reo_model = folder``): a copy of the
    matcher checkpoint, the covariance, and ``image_features``, the identity of the image
    features it was trained on (for the built-in dataset, the encoder checkpoint's name): a
    search on other features is refused rather than scored in a space they do not live in.
    ``regions`` (default: the scorer's): "grid" or "learned", whose ``detector`` is saved beside."""
    folder = Path(folder)
    regions = regions or scorer.regions
    detector = detector or scorer.detector
    if regions not in ("grid", "learned"):
        raise ValueError(f"a scorer makes its regions from image features alone: 'grid' or 'learned', not {regions!r}")
    if regions == "learned" and detector is None:
        raise ValueError("learned regions need their detector saved with the scorer")
    io.write_bytes(Path(matcher_path).read_bytes(), folder / MATCHER_FILE)
    if regions == "learned":
        save_detector(detector, folder / DETECTOR_FILE)
    elif (folder / DETECTOR_FILE).exists():
        (folder / DETECTOR_FILE).unlink()
    with io.atomic_path(folder / COVARIANCE_FILE) as tmp:
        np.savez(tmp, matrix=scorer.covariance.matrix)
    io.write_text(json.dumps({"source": scorer.covariance.source, "shrinkage": scorer.covariance.shrinkage,
                              "lambda": scorer.lam, "tokenizer": scorer.tokenizer, "image_features": image_features,
                              "regions": regions}),
                  folder / FACTS_FILE)


def load_scorer(folder) -> tuple[ReoScorer, Vocabulary, str]:
    """A scorer saved by ``save_scorer``, the vocabulary its matcher reads captions with, and the
    identity of the image features it was trained on."""
    folder = Path(folder)
    for name in SCORER_FILES:
        if not (folder / name).is_file():
            raise ValueError(f"{folder}: no {name}: not a REO scorer folder (experiments/reo_shapes/run.py writes "
                             "one as OUT/reo_scorer)")
    trained = load_matcher(folder / MATCHER_FILE)
    meta = json.loads(io.read_text(folder / FACTS_FILE))
    with np.load(folder / COVARIANCE_FILE) as npz:
        covariance = Covariance.from_matrix(npz["matrix"], meta["source"], meta["shrinkage"])
    regions = meta.get("regions", "grid")  # folders from before region kinds hold grid scorers
    detector = load_detector(folder / DETECTOR_FILE) if regions == "learned" else None
    return (ReoScorer(trained.matcher, trained.params, covariance, meta["lambda"], regions=regions, detector=detector),
            trained.matcher.vocab, meta.get("image_features", ""))
