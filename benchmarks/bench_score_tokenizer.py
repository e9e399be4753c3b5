"""``postgen.score``'s default tokenizer (``ptb`` since 0.2.0) against the old one (``alnum-lower``).

    python benchmarks/bench_score_tokenizer.py [--images 5000] [--pairs 3]

Raw Flickr8k captions (../shared/data/flickr8k/Flickr8k.token.txt): of the first ``--images``
images, caption 1 scored against captions 2-5 by ``postgen.score("CIDEr", gts, res, tokenizer=T)``.
One call with ``ptb`` first (imports, the PTB lexer's patterns compiled, its memo of words filled:
a user's second call), then ``--pairs`` interleaved pairs (ptb, alnum-lower), the kept corpus
released before each call so each one tokenizes and encodes afresh. Prints each call, then the
medians, their ratio, and how far the default's CIDEr-D moved; the load average before and after.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time


def captions(images: int) -> tuple[dict, dict]:
    """(gts, res): the first ``images`` Flickr8k images' captions 2-5 and caption 1, raw."""
    from pregen_jax.io import shared_data
    found: dict = {}
    for line in shared_data("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines():
        key, caption = line.split("\t")
        found.setdefault(key.split("#")[0], []).append(caption)
    names = list(found)[:images]
    return {n: found[n][1:] for n in names}, {n: [found[n][0]] for n in names}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
    from pregen_jax import postgen
    from pregen_jax.postgen.recent import release_kept
    print(f"load average {os.getloadavg()}")
    gts, res = captions(args.images)
    start = time.perf_counter()
    postgen.score("CIDEr", gts, res, tokenizer="ptb")
    print(f"first call (ptb, imports and the lexer included): {time.perf_counter() - start:.3f} s")
    times: dict = {"ptb": [], "alnum-lower": []}
    scores = {}
    for _ in range(args.pairs):
        for tokenizer in times:
            release_kept()
            start = time.perf_counter()
            scores[tokenizer], _ = postgen.score("CIDEr", gts, res, tokenizer=tokenizer)
            times[tokenizer].append(time.perf_counter() - start)
            print(f"{tokenizer:12s} CIDEr-D {scores[tokenizer]:.6f}  {times[tokenizer][-1]:.3f} s", flush=True)
    ptb, alnum = (statistics.median(times[t]) for t in ("ptb", "alnum-lower"))
    print(f"load average {os.getloadavg()}")
    print(f"{args.images} images: median ptb {ptb:.3f} s, alnum-lower {alnum:.3f} s (ratio {ptb / alnum:.2f}); "
          f"CIDEr-D {scores['ptb']:.6f} (ptb) against {scores['alnum-lower']:.6f} (alnum-lower): "
          f"{scores['ptb'] - scores['alnum-lower']:+.6f}")


if __name__ == "__main__":
    main()
