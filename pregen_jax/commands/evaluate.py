"""``pregen-search evaluate``: score COCO results files against references as COCOEvalCap does, and
say whether one system beats another (intervals, paired bootstrap, approximate randomization)."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys

from .base import WORDS, Command, seed, warnings_as_lines


def _at_least(minimum: int):
    """An argparse type: a whole number of at least ``minimum`` (the resampling's floor)."""
    def count(text: str) -> int:
        if not text.isdigit() or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: at least {minimum} (fewer give intervals and p-values too "
                                             "coarse to trust after correcting for several comparisons)")
        return int(text)
    return count


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--references", required=True, metavar="REFS",
                        help="a COCO annotation file, a Karpathy-split JSON (see --split) or the JSONL "
                             "export-references writes")
    parser.add_argument("--captions", required=True, nargs="+", metavar="RES",
                        help="captions files: COCO results files ([{image_id, caption}]), JSONL or TSV keyed by "
                             "image_id, or one caption a line in REFS's image order; with several, each is compared "
                             "with the first; several captions per image (samples: repeated image_ids, caption lists, "
                             "or a JSON object image_id -> list) for the diversity metrics")
    parser.add_argument("--split", default="test", help="the split of a Karpathy-split JSON (default: test)")
    parser.add_argument("--metrics", default=None,
                        help="comma-separated (default: COCOEvalCap's Bleu_1..4, METEOR, ROUGE_L, CIDEr, SPICE; "
                             "WMD on request; the diversity metrics of samples: Div_1, Div_2, gDiv_1, mBLEU_1..4, "
                             "Self_CIDEr, novel)")
    parser.add_argument("--tokenizer", default=None, choices=("ptb", "alnum-lower", "none"),
                        help="ptb: COCO's PTBTokenizer (default; for export-references JSONL without raw text, the "
                             "tokenizer it records, alnum-lower); alnum-lower: lower-case alphanumeric runs; none: as given")
    parser.add_argument("--idf-from", default="scored", choices=("scored", "all"),
                        help="CIDEr-D's document frequencies: the images scored (COCOEvalCap, default) or all "
                             "images of REFS")
    parser.add_argument("--seed", type=seed, default=0, help="seed of the resampling (default 0)")
    parser.add_argument("--resamples", type=_at_least(1000), default=1000,
                        help="bootstrap resamples (default 1000, at least 1000)")
    parser.add_argument("--trials", type=_at_least(999), default=10000,
                        help="approximate-randomization trials (default 10000, at least 999)")
    parser.add_argument("--family", default="all", choices=("all", "metric"),
                        help="the comparisons adjusted together (max-T): all, every comparison printed (default: "
                             "systems after the first x metrics); metric, each metric's on its own")
    parser.add_argument("--train-captions", default=None, metavar="FILE",
                        help="novel: the training captions (a COCO annotation file, a Karpathy-split JSON's train "
                             "split, or export-references JSONL)")
    parser.add_argument("--corenlp-dir", default="", help="SPICE: folder with the Stanford CoreNLP 3.6.0 jars")
    parser.add_argument("--stopwords", default="", help="WMD: stop-word file")
    parser.add_argument("--out", default=None, help="folder for scores.json, per_image.tsv, settings.json "
                                                    "(and significance.tsv)")


METEOR_PROCESS = "pregen_jax.postgen.meteor.process"  # METEOR's native backend in a process of its own


BLAS_THREADS = 4
"""numpy's BLAS threads in evaluate, unless the environment sets them (``OPENBLAS_NUM_THREADS``,
``MKL_NUM_THREADS``): its products (the bootstrap's sums) are small, and one idle thread a core
spins. On 16 cores at 5,000 images: wall medians 1.52 / 1.38 s and CPU 7.2 / 3.7 s with the
threads unset / 4 (benchmarks/README.md, ``bench_evaluate.py --blas-threads``)."""


def _blas_threads_capped() -> None:
    """Cap numpy's BLAS threads at BLAS_THREADS where the user has not chosen: read when numpy is
    first imported, which in ``pregen-search evaluate`` is after this."""
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(name, str(BLAS_THREADS))


def _run(args: argparse.Namespace) -> int:
    from ..processes import collector_paused, started_early
    _blas_threads_capped()
    meteor = args.metrics is None or "METEOR" in (m.strip() for m in args.metrics.split(","))
    # METEOR's process loads (numba, its tables) while this one imports, reads and tokenizes; score_files
    # adopts it (METEOR.apart), or it ends with the command
    with started_early(METEOR_PROCESS) if meteor else contextlib.nullcontext(), collector_paused():
        return _evaluated(args)


def _evaluated(args: argparse.Namespace) -> int:
    from .. import io
    from ..evaluation import evaluate
    from ..evaluation.outputs import write_evaluation
    out = io.check_out_folder(args.out) if args.out else None
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] if args.metrics else None
    if args.metrics is not None and not metrics:
        raise ValueError(f"--metrics {args.metrics!r}: names no metric")
    with warnings_as_lines():  # e.g. a cache folder that cannot be written, a reference holding METEOR's '|||'
        evaluation = evaluate(args.references, args.captions, split=args.split, metrics=metrics,
                              tokenizer=args.tokenizer, idf_from=args.idf_from, seed=args.seed,
                              resamples=args.resamples, trials=args.trials, family=args.family,
                              corenlp_dir=args.corenlp_dir, train_captions=args.train_captions,
                              stopwords=args.stopwords)  # the Python API: the same function, the same table
    for name, why in evaluation.unavailable.items():
        print(f"warning: {name} not scored: {why}", file=sys.stderr)
    for note in evaluation.notes:
        print(f"warning: {note}", file=sys.stderr)
    print(evaluation)
    if out is not None:
        with io.staged_folder(out) as staging:
            written = write_evaluation(evaluation, staging)
        print(f"wrote {out}/{', '.join(written)}")
    print(WORDS)
    return 0


COMMAND = Command("evaluate", "score COCO results files against references as COCOEvalCap does (PTB tokens), "
                              "with intervals and paired tests between systems", _arguments, _run)
