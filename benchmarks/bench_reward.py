"""The CIDEr-D reward of one SCST step on the device (pregen_jax.rewards.CiderD) against the Python
reward self-critical.pytorch computes (ids to strings, then ciderD with a cached document frequency).

    python benchmarks/bench_reward.py [--images 50 500] [--repeats 7] [--df-keys 2000000]

Inputs, real where they can be: the Flickr8k references (../shared/data/flickr8k, 5 per image,
ids from the vocabulary of all its captions) and, as the K = 5 samples of each image, the
captions of 5 where-image2 models of the 1,000 Flickr8k test images (init_1, pre_1, par_1,
merge_1, init_2), as ids padded to T = 20 (longer ones cut, so without end token, as a sampler
of 20 positions gives them). The document-frequency table is COCO-sized and partly synthetic:
the real frequencies of Flickr8k's 8,092 images, then random 2- to 4-grams of its vocabulary
with random frequencies up to ``--df-keys`` keys in all, counted as over 113,287 images
(COCO's Karpathy train + restval). The device reward is built over the 1,000 test images'
references with that table passed in (its step time depends on the tables' sizes through
log(size) only).

Timed per step, B = images x 5 samples: the Python side from the sampled id arrays and the
references' id arrays to the rewards (``array_to_str`` of every sample and reference row,
then pycocoevalcap's ``compute_cider`` with the cached frequencies and log(113,287): the
same code as ciderD's; tests/ciderd_reference.py); the device side ``reward(samples,
image_index)`` to a ready array. Warm: the median of ``--repeats`` calls after the first;
the first call's extra time (jit compilation) is printed apart. The rewards are compared (the
device's in float32). The last line is machine-readable: ``reward_speedup_B<n>=<ratio> ...``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
MODELS = ("init_1", "pre_1", "par_1", "merge_1", "init_2")
T, COCO_IMAGES = 20, 113_287


def flickr8k():
    """(references: ids of each image's captions by image name, test image names, samples i32[5, 1000, T])."""
    from pregen_jax.datasets import tokenize
    by_image: dict[str, list[list[str]]] = {}
    for line in (SHARED / "flickr8k" / "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        by_image.setdefault(key.split("#")[0], []).append(tokenize(caption))
    folder = SHARED / "where-image2-captions"
    test = (folder / "imgs_flickr8k.txt").read_text().split()
    captions = [[tokenize(c) for c in (folder / f"flickr8k_{m}.txt").read_text(encoding="utf-8").splitlines()]
                for m in MODELS]
    words = sorted({w for refs in by_image.values() for r in refs for w in r} | {w for m in captions for c in m for w in c})
    vocab = {w: k + 1 for k, w in enumerate(words)}  # 0: the end token
    references = {i: [[vocab[w] for w in r] for r in refs] for i, refs in by_image.items()}
    samples = np.zeros((len(MODELS), len(test), T), np.int32)
    for m, lines in enumerate(captions):
        for k, caption in enumerate(lines):
            ids = [vocab[w] for w in caption][:T]
            samples[m, k, :len(ids)] = ids
    return references, test, samples, len(vocab) + 1


def coco_sized(real, keys: int, vocab: int, seed: int = 0):
    """``real`` (a DocumentFrequency) with random 2- to 4-gram keys added up to ``keys``, over COCO_IMAGES images."""
    from pregen_jax.rewards import DocumentFrequency
    rng = np.random.default_rng(seed)
    extra = max(keys - len(real.keys), 0)  # the real table alone when it is already that large
    order = rng.integers(2, 5, extra)
    ids = rng.integers(1, vocab, (extra, 4)).astype(np.uint64) + np.uint64(1)
    key = np.zeros(extra, np.uint64)
    for k in range(4):
        key |= np.where(k < order, ids[:, k], 0).astype(np.uint64) << np.uint64(48 - 16 * k)
    key = np.setdiff1d(np.unique(key), real.keys)
    df = np.minimum(rng.zipf(1.6, len(key)), COCO_IMAGES).astype(np.int64)
    merged = np.concatenate([real.keys, key])
    order = np.argsort(merged)
    return DocumentFrequency(merged[order], np.concatenate([real.df, df])[order], COCO_IMAGES)


def python_df(table) -> dict:
    """The table as ciderD's cached ``document_frequency``: tuples of id strings -> frequency."""
    grams = {}
    for key, df in zip(table.keys.tolist(), table.df.tolist()):
        ids = [(key >> (48 - 16 * k)) & 0xFFFF for k in range(4)]
        grams[tuple(str(t - 1) for t in ids if t)] = float(df)
    return grams


def padded_refs(refs: list[list[int]]) -> np.ndarray:
    """A batch's label rows as a data loader gives them: ids, then 0 (the end), zero-padded."""
    rows = np.zeros((len(refs), max(map(len, refs)) + 1), np.int32)
    for r, ids in enumerate(refs):
        rows[r, :len(ids)] = ids
    return rows


def python_step(scorer, samples: np.ndarray, image_index: np.ndarray, label_rows: list[np.ndarray]) -> np.ndarray:
    """One step of the Python reward: every row to a string, then CIDEr-D with the cached frequencies."""
    from tests.ciderd_reference import array_to_str
    gts = [[array_to_str(row) for row in rows] for rows in label_rows]
    step = scorer.empty()
    for row, image in zip(samples, image_index):
        step += (array_to_str(row), gts[image])
    return step.compute_score()[1]


def timed(call, repeats: int) -> tuple[float, list[float], object]:
    """(first call's seconds, warm calls' seconds, the last result)."""
    start = time.perf_counter()
    result = call()
    first = time.perf_counter() - start
    warm = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        warm.append(time.perf_counter() - start)
    return first, warm, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, nargs="+", default=[50, 500], help="images per step (x 5 samples each)")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--df-keys", type=int, default=2_000_000, help="keys of the document-frequency table")
    args = parser.parse_args()
    import jax

    from pregen_jax.rewards import CiderD, DocumentFrequency
    from tests.ciderd_reference import CachedCiderD

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; load average {os.getloadavg()[0]:.1f}")
    references, test, samples, vocab = flickr8k()
    start = time.perf_counter()
    table = coco_sized(DocumentFrequency.from_references(list(references.values()), end="always"), args.df_keys, vocab)
    print(f"document frequencies: {len(table.keys):,} keys over {table.images:,} images "
          f"({(table.df > 1).sum():,} in more than one), built in {time.perf_counter() - start:.1f} s")
    start = time.perf_counter()
    scorer = CachedCiderD(python_df(table), table.images)
    print(f"the Python reward's cached frequencies: {time.perf_counter() - start:.1f} s (once)")
    labels = [padded_refs(references[i]) for i in test]
    start = time.perf_counter()
    reward = CiderD(labels, document_frequency=table)  # label rows, read as array_to_str reads them
    print(f"the device reward's tables: {time.perf_counter() - start:.1f} s (once)")
    speedups = {}
    for images in args.images:
        chosen = np.random.default_rng(images).choice(len(test), images, replace=False)
        image_index = np.repeat(chosen, len(MODELS))                                # K = 5 samples per image
        rows = samples[:, chosen].transpose(1, 0, 2).reshape(-1, T)
        device_rows, device_index = jax.device_put(rows), jax.device_put(image_index.astype(np.int32))
        first_d, warm_d, got = timed(lambda r=device_rows, i=device_index: jax.block_until_ready(reward(r, i)),
                                     args.repeats)
        first_p, warm_p, want = timed(lambda r=device_rows, i=device_index: python_step(
            scorer, np.asarray(r), np.asarray(i), labels), max(args.repeats // 2, 2))
        got = np.asarray(got, np.float64)
        worst = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
        d, p = statistics.median(warm_d), statistics.median(warm_p)
        speedups[len(rows)] = p / d
        print(f"B = {images} x 5 = {len(rows)}: device {d * 1e3:.2f} ms warm (median of {len(warm_d)}; "
              f"first call +{(first_d - d):.2f} s: compilation), Python {p * 1e3:.1f} ms "
              f"(median of {len(warm_p)}): {p / d:.1f}x; mean reward {want.mean():.4f}, "
              f"largest |difference| / max(1, |r|) {worst:.1e} (float32)")
    print(" ".join(f"reward_speedup_B{b}={s:.2f}" for b, s in speedups.items()))


if __name__ == "__main__":
    main()
