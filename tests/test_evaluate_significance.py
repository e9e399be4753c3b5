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

Then each part of the resampling against an independent computation (issues 41-43): Holm against
its loop, the difference interval against the test it inverts, BCa against
``scipy.stats.bootstrap(method="BCa")`` on the same resamples, the bootstrap counts' moments and
memory, the two seed streams; and (slow) the family-wise error of Holm with five equal systems.
"""
import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from pregen_jax import postgen
from pregen_jax.evaluation.significance import bootstrap_p, interval, jackknife, randomization_p, resampled_sums
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
        resampled = resampled_sums(sample, RESAMPLES, rng)
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


# --- The resampling's parts, each against an independent computation (issue 41 item 4, 42 item 4, 43) ---

class _Ratio:
    """A corpus score that is a ratio of summed statistics (rows f64[images, 2]: sum x / sum y), as BLEU's
    precisions are; with y = 1 it is a mean, as CIDEr-D's is."""

    def from_sums(self, sums, images):
        sums = np.asarray(sums, np.float64)
        return sums[..., 0] / sums[..., 1]

    def aggregate(self, rows):
        return self.from_sums(np.asarray(rows).sum(axis=0), len(rows))


def test_holm_equals_its_step_down_definition():
    from pregen_jax.evaluation.significance import holm
    np.testing.assert_allclose(holm(np.array([0.01, 0.04, 0.03, 0.005])), [0.03, 0.06, 0.06, 0.02])
    rng = np.random.default_rng(0)
    for m in (1, 2, 4, 7):
        p = rng.uniform(0, 0.2, m)
        order = np.argsort(p)
        expected = np.empty(m)
        running = 0.0
        for rank, i in enumerate(order):  # the textbook loop: running max of (m - rank) p_(rank), capped at 1
            running = max(running, min(1.0, (m - rank) * p[i]))
            expected[i] = running
        np.testing.assert_allclose(holm(p), expected, rtol=0, atol=1e-15)


def test_the_difference_interval_excludes_zero_exactly_when_the_bootstrap_p_is_at_most_005():
    from pregen_jax.evaluation.significance import difference_interval
    rng = np.random.default_rng(1)
    agree = 0
    for _ in range(400):
        resampled = rng.normal(rng.uniform(-0.05, 0.05), 0.02, 1000) * rng.choice([1, 3])
        observed = float(np.mean(resampled) + rng.normal(0, 0.002))
        low, high = difference_interval(resampled, observed)
        assert low <= observed <= high
        agree += (bootstrap_p(resampled, observed) <= 0.05) == (not low <= 0 <= high)
    assert agree == 400


def test_too_few_resamples_or_trials_are_refused_in_one_line(capsys):
    from pregen_jax.cli import main
    from pregen_jax.evaluation import Resampling
    with pytest.raises(ValueError, match="at least 1000 bootstrap resamples"):
        Resampling(resamples=999)
    with pytest.raises(ValueError, match="at least 999 randomization trials"):
        Resampling(trials=998)
    Resampling(resamples=1000, trials=999)
    for option, value in (("--resamples", "1"), ("--trials", "500")):
        assert main_exit(main, ["evaluate", "--references", "refs.json", "--captions", "a.json", option, value]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("pregen-search evaluate: error: argument") and "at least" in err[0]


def main_exit(main, args) -> int:
    try:
        return main(args)
    except SystemExit as done:  # argparse's own refusals
        return int(done.code)


def test_bootstrap_counts_are_small_chunks_of_multinomial_counts():
    from pregen_jax.evaluation import significance
    images, resamples = 3000, 1000
    chunks = list(significance.bootstrap_counts(images, resamples, np.random.default_rng(2)))
    assert all(c.dtype == np.uint16 and c.size <= max(significance._CELLS, images) for c in chunks)
    counts = np.concatenate(chunks).astype(np.float64)
    assert counts.shape == (resamples, images) and (counts.sum(axis=1) == images).all()
    # Multinomial(images, 1/images) per resample, as the B x n index version's bincounts: each count has
    # variance 1 - 1/images (a sample variance over B resamples has standard error about sqrt(3 / B), the
    # count being near Poisson(1): fourth central moment 4) and is 0 with probability (1 - 1/images)^images;
    # both within 5 standard errors, for the chunks and for the index version alike.
    index_version = np.random.default_rng(3).integers(0, images, (resamples, images))
    indexed = np.bincount((index_version + images * np.arange(resamples)[:, None]).ravel(),
                          minlength=resamples * images).reshape(resamples, images)
    for drawn in (counts, indexed):
        assert abs(drawn.var(axis=0, ddof=1).mean() - (1 - 1 / images)) < 5 * np.sqrt(3 / resamples / images)
        assert abs(np.mean(drawn == 0) - (1 - 1 / images) ** images) < 5 * np.sqrt(0.37 * 0.63 / drawn.size)


def test_resampled_sums_peak_memory_is_chunks_not_b_by_n(capsys):
    """40,504 images (COCO val2014) x 1,000 resamples: the B x n int64 index matrix alone was 324 MB
    (its bincount and float copy three more); the chunks keep the bootstrap's numpy allocations near
    its output."""
    import tracemalloc

    from pregen_jax.evaluation.significance import resampled_sums
    rows = np.random.default_rng(4).random((40504, 20))
    tracemalloc.start()
    resampled_sums(rows, 1000, np.random.default_rng(5))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    with capsys.disabled():
        print(f"\nresampled_sums at 40,504 images x 1,000 resamples: peak {peak / 2 ** 20:.1f} MiB traced")
    assert peak < 128 * 2 ** 20  # a chunk (64 MiB as float64, 16 as u16) and the output; the index version: 1,236 MiB


def test_changing_resamples_keeps_the_randomization_p_and_a_system_equals_itself():
    from pregen_jax.evaluation import Resampling, compare
    rng = np.random.default_rng(6)
    base = np.column_stack([rng.gamma(1.0, 1.0, 300), np.ones(300)])
    stats = {name: {"mean": base + shift * np.column_stack([rng.normal(1, 0.5, 300), np.zeros(300)])}
             for name, shift in (("a", 0.0), ("b", 0.05), ("c", 0.2))}
    metrics = {"mean": _Ratio()}
    one = compare(metrics, stats, Resampling(resamples=1000, trials=999)).set_index("system")
    two = compare(metrics, stats, Resampling(resamples=2000, trials=999)).set_index("system")
    assert (one.loc[["b", "c"], "p_randomization"] == two.loc[["b", "c"], "p_randomization"]).all()
    assert (one.loc[["b", "c"], "p_bootstrap"] != two.loc[["b", "c"], "p_bootstrap"]).any()
    from pregen_jax.evaluation.significance import holm
    np.testing.assert_array_equal(one.loc[["b", "c"], "p_holm"], holm(one.loc[["b", "c"], "p_bootstrap"].to_numpy()))
    assert (one.loc[["b", "c"], "p_holm"] >= one.loc[["b", "c"], "p_bootstrap"]).all()


@pytest.mark.parametrize("statistic", ["mean", "ratio"])
def test_bca_equals_scipy_bootstrap_on_the_same_resamples(statistic):
    """Our BCa interval against ``scipy.stats.bootstrap(method="BCa")`` handed our own resampled scores
    (``bootstrap_result``, ``n_resamples=0``): scipy computes its bias and acceleration (its own
    jackknife, from the raw data) and its percentiles; only the resamples are shared."""
    from scipy import stats as scipy_stats

    from pregen_jax.evaluation.significance import resampled_sums
    rng = np.random.default_rng(7)
    x = rng.lognormal(0, 1, 200)               # right-skewed, as per-image CIDEr-D is
    y = np.ones(200) if statistic == "mean" else rng.uniform(5, 15, 200)
    rows = np.column_stack([x, y])
    metric = _Ratio()
    resampled = metric.from_sums(resampled_sums(rows, 4000, rng), 200)
    ours = interval(resampled, float(metric.aggregate(rows)), jackknife(metric, rows))
    previous = scipy_stats._resampling.BootstrapResult(confidence_interval=None, bootstrap_distribution=resampled,
                                                       standard_error=None)
    theirs = scipy_stats.bootstrap((x, y), lambda a, b, axis=-1: a.sum(axis=axis) / b.sum(axis=axis), paired=True,
                                   vectorized=True, method="BCa", n_resamples=0, bootstrap_result=previous,
                                   confidence_level=0.95).confidence_interval
    np.testing.assert_allclose(ours, (theirs.low, theirs.high), rtol=1e-12)
    assert ours[1] - float(metric.aggregate(rows)) > float(metric.aggregate(rows)) - ours[0]  # skewed: not symmetric


FAMILY_MODELS = ("init_1", "pre_1", "par_1", "merge_1", "init_2")
FAMILY_REPLICATIONS = 1000


def family_wise_error(replications: int = FAMILY_REPLICATIONS, images: int = 500) -> dict:
    """{metric: (replications with any Holm-adjusted p_bootstrap <= 0.05, the same for the raw p_bootstrap,
    for the raw p_randomization)}: 5 systems of equal quality compared with the first, each made
    image by image from the where-image2 models' captions of that image, dealt out to the 5 systems
    in a random order (so no system is better than another), on ``images`` of the 1,000 Flickr8k
    test images drawn afresh each replication, with ``compare`` as ``evaluate`` runs it."""
    from pregen_jax.datasets import tokenize
    from pregen_jax.evaluation import Resampling, compare
    folder = shared("where-image2-captions")
    names = folder.joinpath("imgs_flickr8k.txt").read_text().split()
    references: dict = {}
    for line in shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        references.setdefault(key.split("#")[0], []).append(" ".join(tokenize(caption)))
    gts = {k: references[name] for k, name in enumerate(names)}
    captions = [folder.joinpath(f"flickr8k_{model}.txt").read_text(encoding="utf-8").splitlines()
                for model in FAMILY_MODELS]
    metrics = {name: postgen.REGISTRY[name].factory(postgen.PostgenOptions()) for name in METRICS}
    stats = {name: np.stack([np.asarray(metric.stats(gts, {k: [" ".join(tokenize(c[k]))] for k in gts}), np.float64)
                             for c in captions]) for name, metric in metrics.items()}   # f64[models, images, k]
    rng = np.random.default_rng(41)
    errors = {name: np.zeros(3, int) for name in METRICS}
    with threadpool_limits(1):
        for replication in range(replications):
            sample = rng.choice(len(names), images, replace=False)
            dealt = rng.permuted(np.tile(np.arange(len(FAMILY_MODELS)), (images, 1)), axis=1)  # [image, system] -> model
            systems = {f"s{j}": {name: stats[name][dealt[:, j], sample] for name in METRICS}
                       for j in range(len(FAMILY_MODELS))}
            table = compare(metrics, systems, Resampling(resamples=1000, trials=999, seed=replication))
            compared = table[table["system"] != "s0"]
            for name, rows in compared.groupby("metric"):
                errors[name] += [(rows["p_holm"] <= 0.05).any(), (rows["p_bootstrap"] <= 0.05).any(),
                                 (rows["p_randomization"] <= 0.05).any()]
    return errors


@pytest.mark.slow
def test_holm_keeps_the_family_wise_error_of_five_equal_systems_at_005(capsys):
    """FWER at most 0.05 within its Monte Carlo margin: the Clopper-Pearson 95% interval of the
    share of replications with any false rejection reaches down to 0.05 or below."""
    from scipy.stats import binomtest
    errors = family_wise_error()
    for name, (holm_count, raw_count, randomization_count) in errors.items():
        low, high = binomtest(int(holm_count), FAMILY_REPLICATIONS).proportion_ci(0.95, method="exact")
        with capsys.disabled():
            print(f"\n{name}: family-wise error over 4 comparisons with the first of 5 equal systems, "
                  f"{FAMILY_REPLICATIONS} replications of 500 images: Holm p_bootstrap {holm_count / FAMILY_REPLICATIONS:.3f} "
                  f"[{low:.3f}, {high:.3f}]; unadjusted p_bootstrap {raw_count / FAMILY_REPLICATIONS:.3f}, "
                  f"unadjusted p_randomization {randomization_count / FAMILY_REPLICATIONS:.3f}")
        assert low <= 0.05, (name, holm_count)
