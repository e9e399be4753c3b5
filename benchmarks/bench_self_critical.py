"""One SCST step's self-critical advantages (pregen_jax.rewards.SelfCritical) against
self-critical.pytorch's Python ``get_self_critical_reward``, on its own kind of inputs.

    python benchmarks/bench_self_critical.py [--images 1000] [--batch 500] [--repeats 5]

Inputs: Flickr8k's first ``--images`` training images (../shared/data/flickr8k), a ``-idxs.p``
written from them as ``prepro_ngrams.py`` writes it, their label rows cut at 16 positions (a cut
row keeps no end token), and ``--batch`` images of them with K = 5 samples each (their captions
with a fifth of the words swapped, cut at 16) and one greedy caption (tests/test_self_critical.py
builds the same, smaller). Reward: CIDEr-D + 0.5 BLEU-4, greedy baseline.

Timed, warm medians after a first call (whose extra time, compilation, is printed apart; the two
device calls in turns): the device side from numpy arrays (range checks, DLPack, padding, the jitted call, the advantages back
as numpy) and from JAX arrays already on the device; the Python side as self-critical.pytorch
runs it (``array_to_str`` of every row, ciderD's cached CIDEr-D, pycocoevalcap's BLEU; the
transcription in tests/test_self_critical.py). The advantages are compared (float32 against float64).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def warm(call, repeats: int) -> tuple[float, float, object]:
    """(first call's seconds, the median of ``repeats`` further calls (nan for none), the last result)."""
    start = time.perf_counter()
    result = call()
    first = time.perf_counter() - start
    times = [float("nan")] if repeats == 0 else []
    for _ in range(repeats):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return first, statistics.median(times), result


def interleaved(calls: dict, repeats: int) -> list[float]:
    """The median seconds of each call, timed in turns (so a change of the machine's load falls on both)."""
    times = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    return [statistics.median(t) for t in times.values()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--images", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import jax
    import jax.numpy as jnp

    from pregen_jax.rewards import Bleu, CiderD, DocumentFrequency, SelfCritical
    from tests.conftest import SHARED_DATA
    from tests.test_self_critical import get_self_critical_reward, scst_data

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}; load average {os.getloadavg()[0]:.1f}")
    path, vocab_size, labels, _, batch, samples, greedy = scst_data(
        SHARED_DATA / "flickr8k", args.images, args.batch, Path(tempfile.mkdtemp()))
    critic = SelfCritical(CiderD(labels, document_frequency=DocumentFrequency.from_pickle(path), vocab_size=vocab_size),
                          Bleu(labels, vocab_size=vocab_size), cider_weight=1.0, bleu_weight=0.5)
    on_device = [jax.device_put(jnp.asarray(a, jnp.int32)) for a in (samples, greedy, batch)]
    calls = {"numpy": lambda: critic.advantage_over_greedy(samples, greedy, batch),
             "jax": lambda: jax.block_until_ready(critic.advantage_over_greedy(*on_device))}
    first_n, _, got = warm(calls["numpy"], 0)
    calls["jax"]()
    numpy_s, jax_s = interleaved(calls, args.repeats)
    data_gts = [labels[i] for i in batch]
    _, python_s, want = warm(lambda: get_self_critical_reward(greedy, data_gts, samples, 1.0, 0.5, path),
                             max(args.repeats // 2, 1))
    worst = float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))
    print(f"B = {args.batch} x 5 = {len(samples)} samples + {args.batch} greedy, T = 16: device from numpy "
          f"{numpy_s * 1e3:.1f} ms, from JAX arrays {jax_s * 1e3:.1f} ms (first call {first_n:.1f} s with "
          f"compilation), Python {python_s:.2f} s (median of {max(args.repeats // 2, 1)}): {python_s / numpy_s:.1f}x from numpy; largest |difference| / "
          f"max(1, |r|) {worst:.1e} (float32); mean |advantage| {np.abs(want).mean():.3f}")


if __name__ == "__main__":
    main()
