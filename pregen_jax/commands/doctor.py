"""``pregen-search doctor``: which post-gen metrics and JAX devices this machine has, and whether the
installed versions are the locked ones (``lockfile``)."""
from __future__ import annotations

import argparse

from .base import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corenlp-dir", default=None, help="folder with the Stanford CoreNLP 3.6.0 jars (SPICE)")
    parser.add_argument("--prepare", action="store_true",
                        help="build every cache a first evaluate builds (METEOR's paraphrase table and compiled "
                             "search), so that run starts at once")


def _run(args: argparse.Namespace) -> int:
    import jax

    from .. import postgen
    from ..postgen import ptb
    from ..postgen.jvm import java_description
    from .lockfile import lock_line
    print(f"java: {java_description()}")  # which Java METEOR, SPICE and the PTB tokenizer run, and why that one
    print(f"PTB tokenizer: {ptb.description()}")  # which backend evaluate's default tokenizer runs
    print(lock_line())  # the versions tested (constraints.txt) against the versions installed
    print(f"JAX {jax.__version__} devices: {', '.join(f'{d.platform}:{d.device_kind}' for d in jax.devices())}")
    options = postgen.PostgenOptions(corenlp_dir=args.corenlp_dir or "")
    print(f"post-gen backend: {options.backend} (native: this package's; coco: pycocoevalcap's, its jars, gensim's)")
    print("post-gen metrics:")
    for name, (ok, why) in postgen.metric_availability(options).items():
        print(f"  {name:8s} {'available' if ok else 'UNAVAILABLE'}: {why}")
    if args.prepare:
        from ..postgen.meteor import prepare
        print(f"prepared: {prepare()}")
    return 0


COMMAND = Command("doctor", "which post-gen metrics and JAX devices this machine has", _arguments, _run)
