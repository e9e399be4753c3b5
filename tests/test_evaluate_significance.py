"""The intervals and p-values of ``evaluate`` are right (issue 35, item 3), by simulation on Flickr8k.

The "system" is a held-out human caption of every Flickr8k image (references: the other four);
the truth is the metric on all images, CIDEr-D's document frequencies from all of them (the rule
``--idf-from all`` applies to a sample). Each replication scores a random sample of images: its
95% bootstrap interval must cover the truth at least 93% of the time (1,000 replications, 200
and 500 images). Two systems that are one system (captions 1 and 2 of each image, references
captions 3-5, swapped at random image by image) must be rejected at 0.05 in 3-7% of replications,
by the paired bootstrap and by approximate randomization. Statistics are computed once for all
images (alnum-lower tokens: no JVM); a replication only resamples rows, through the metrics'
own ``from_sums``.
"""
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from pregen_jax import postgen
from pregen_jax.evaluation.significance import bootstrap_counts, bootstrap_p, interval, jackknife, randomization_p
from tests.conftest import shared

METRICS = ("Bleu_4", "CIDEr", "ROUGE_L")
REPLICATIONS = 1000
RESAMPLES = 1000
TRIALS = 1000  # randomization trials per replication (the command's default is 10,000; 0.05 needs far fewer)


def _all_flickr8k() -> list[list[str]]:
    """Every Flickr8k image with five captions, alnum-lower tokens joined by spaces."""
    from pregen_jax.datasets import tokenize
    captions: dict = {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        captions.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    return [c for c in captions.values() if len(c) == 5 and all(c)]


@pytest.fixture(scope="module")
def population():
    return statistics_of_flickr8k()


def statistics_of_flickr8k():
    """(metrics, column slices, f64[images, K]): for each metric the statistics of caption 1 against
    captions 2-5, then of captions 1 and 2 against captions 3-5, side by side (one resample of rows
    serves every metric and both experiments)."""
    images = _all_flickr8k()
    assert len(images) >= 8000
    metrics, blocks = {}, []
    for name in METRICS:
        metric = postgen.REGISTRY[name].factory(postgen.PostgenOptions())
        gts = {k: c[2:] for k, c in enumerate(images)}
        blocks.append((name, [metric.stats({k: c[1:] for k, c in enumerate(images)}, {k: [c[0]] for k, c in enumerate(images)}),
                              *(metric.stats(gts, {k: [c[j]] for k, c in enumerate(images)}) for j in (0, 1))]))
        metrics[name] = metric
    columns, at = {}, 0
    for name, parts in blocks:
        k = parts[0].shape[1]
        columns[name] = [slice(at + j * k, at + (j + 1) * k) for j in range(3)]  # held out, first, second
        at += 3 * k
    return metrics, columns, np.concatenate([part for _, parts in blocks for part in parts], axis=1)


_FOUND: dict = {}


def simulate(population, images: int, seed: int) -> dict:
    """{metric: (coverage of the 95% BCa interval, type-I rate of the paired bootstrap, of approximate
    randomization, coverage of the plain percentile interval)} over ``REPLICATIONS`` samples of
    ``images`` images (worked out once per size)."""
    if images in _FOUND:
        return _FOUND[images]
    metrics, columns, stats = population
    truth = {name: float(metric.aggregate(stats[:, columns[name][0]])) for name, metric in metrics.items()}
    firsts = np.concatenate([np.arange(stats.shape[1])[columns[name][1]] for name in metrics])
    seconds = np.concatenate([np.arange(stats.shape[1])[columns[name][2]] for name in metrics])
    pair_columns, at = {}, 0  # each metric's columns among firsts (and seconds)
    for name in metrics:
        width = columns[name][1].stop - columns[name][1].start
        pair_columns[name], at = slice(at, at + width), at + width
    rng = np.random.default_rng(seed)
    hits = {name: np.zeros(4) for name in metrics}
    with threadpool_limits(1):  # small products: BLAS threads would spin (2.3x the CPU time, measured)
        _replicate(metrics, columns, stats, truth, images, firsts, seconds, pair_columns, rng, hits)
    _FOUND[images] = {name: tuple(float(x) for x in h / REPLICATIONS) for name, h in hits.items()}
    return _FOUND[images]


def _replicate(metrics, columns, stats, truth, images, firsts, seconds, pair_columns, rng, hits) -> None:
    """``REPLICATIONS`` samples of ``images`` images, adding to ``hits`` (see ``simulate``)."""
    for _ in range(REPLICATIONS):
        sample = stats[rng.choice(len(stats), images, replace=False)].copy()
        swap = rng.integers(0, 2, images).astype(bool)  # the two systems' captions swapped at random
        for first, second in (columns[name][1:] for name in metrics):
            a, b = sample[swap, first], sample[swap, second]
            sample[swap, first], sample[swap, second] = b, a
        resampled = bootstrap_counts(images, RESAMPLES, rng) @ sample
        p_randomization = randomization_p(metrics, pair_columns, sample[:, firsts], sample[:, seconds], TRIALS, rng)
        for name, metric in metrics.items():
            held_out, first, second = columns[name]
            scores = metric.from_sums(resampled[:, held_out], images)
            low, high = interval(scores, float(metric.aggregate(sample[:, held_out])), jackknife(metric, sample[:, held_out]))
            plain_low, plain_high = interval(scores)
            diffs = metric.from_sums(resampled[:, second], images) - metric.from_sums(resampled[:, first], images)
            observed = float(metric.aggregate(sample[:, second]) - metric.aggregate(sample[:, first]))
            hits[name] += [low <= truth[name] <= high, bootstrap_p(diffs, observed) < 0.05,
                           p_randomization[name] < 0.05, plain_low <= truth[name] <= plain_high]


@pytest.mark.parametrize("name", METRICS)
def test_intervals_cover_and_p_values_reject_at_the_nominal_rate(population, name, capsys):
    for images in (200, 500):
        cover, type1_bootstrap, type1_randomization, plain = simulate(population, images, seed=images)[name]
        with capsys.disabled():
            print(f"\n{name}, {images} images: coverage {cover:.3f} (percentile interval: {plain:.3f}); "
                  f"type-I at 0.05: paired bootstrap "
                  f"{type1_bootstrap:.3f}, approximate randomization {type1_randomization:.3f}")
        assert cover >= 0.93, (images, cover)
        assert 0.03 <= type1_bootstrap <= 0.07 and 0.03 <= type1_randomization <= 0.07, (images, type1_bootstrap,
                                                                                          type1_randomization)


@pytest.mark.parametrize("name", METRICS)
def test_coverage_at_50_and_100_images_is_reported(population, name, capsys):
    """Small samples: reported (the issue asks for the figures), not held to 0.93."""
    for images in (50, 100):
        cover, type1_bootstrap, type1_randomization, plain = simulate(population, images, seed=images)[name]
        with capsys.disabled():
            print(f"\n{name}, {images} images: coverage {cover:.3f} (percentile interval: {plain:.3f}); "
                  f"type-I at 0.05: paired bootstrap "
                  f"{type1_bootstrap:.3f}, approximate randomization {type1_randomization:.3f}")
        assert 0.8 <= cover <= 1
