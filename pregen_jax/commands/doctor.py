"""``pregen-search doctor``: which post-gen metrics and JAX devices this machine has, and whether the
installed versions are the locked ones (``lockfile``)."""
from __future__ import annotations

import argparse

from .base import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--corenlp-dir", default=None, help="folder with the Stanford CoreNLP 3.6.0 jars (SPICE)")


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
    print(f"post-gen backends: METEOR {postgen.meteor.backend_for(options)}, CIDEr/Bleu_n/ROUGE_L/WMD {options.backend}")
    print("post-gen metrics:")
    for name, (ok, why) in postgen.metric_availability(options).items():
        print(f"  {name:8s} {'available' if ok else 'UNAVAILABLE'}: {why}")
    return 0


COMMAND = Command("doctor", "which post-gen metrics and JAX devices this machine has", _arguments, _run)
