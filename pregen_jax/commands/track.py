"""``pregen-search track``: keep the best checkpoint of a stream (``selection.Tracker``), offering each
checkpoint not yet decided: caption files (scored on every image: their captions cost nothing) or
the files of a folder that a user's ``--decode module:function`` decodes, in natural order (digits
compared as numbers: step-9 before step-10). Run it again with the same ``--state`` as new
checkpoints appear: decided ones keep their verdicts (each printed again, saying so, nothing decoded)."""
from __future__ import annotations

import argparse
import re

from .base import WORDS, Command, check_caption_files, seed, warnings_as_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--references", required=True, metavar="REFS",
                        help="the validation references: a COCO annotation file, a Karpathy-split JSON (see --split) "
                             "or the JSONL export-references writes")
    parser.add_argument("--split", default="val", choices=["val", "test"], help="a Karpathy-split JSON's split (default val)")
    parser.add_argument("--captions", nargs="*", default=[], metavar="FILE",
                        help="checkpoints that exist as captions, in the order they were saved (each scored on every image)")
    parser.add_argument("--checkpoints", default=None, metavar="DIR",
                        help="a folder of checkpoint files, offered in natural name order: digits compared as numbers, "
                             "step-9 before step-10 (with --decode)")
    parser.add_argument("--decode", default=None, metavar="MODULE:FUNCTION",
                        help="with --checkpoints: FUNCTION(path, image_indices) -> captions, image i being REFS's i-th image")
    parser.add_argument("--tokenizer", default=None, choices=("ptb", "alnum-lower", "none"),
                        help="what the metric sees (default ptb, COCO's; an export-references file's own)")
    parser.add_argument("--metric", default="CIDEr", help="a post-gen metric whose corpus score is the mean of per-image "
                                                          "scores: CIDEr (default), ROUGE_L, WMD, SPICE")
    parser.add_argument("--within", type=float, default=0.02, metavar="EPS",
                        help="'not better' once a checkpoint is shown at most EPS above the kept one (default 0.02)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="1 - alpha for the whole stream, every verdict at once (default 0.95)")
    parser.add_argument("--most", type=int, default=None, metavar="K",
                        help="declare at most K offers (checkpoint files): alpha / (K - 1) for each of their K - 1 comparisons, the "
                             "first offer being kept without one; more files than K are refused (default: 6 alpha / "
                             "(pi^2 j^2) for comparison j, offer j + 1, any number)")
    parser.add_argument("--patience", type=int, default=None, metavar="P",
                        help="stop after P offers in a row that are not better or undecided (default: offer every checkpoint)")
    parser.add_argument("--budget", type=float, default=1.0,
                        help="with --checkpoints: the share of images an offer may draw (default 1: it always decides)")
    parser.add_argument("--batch", type=int, default=None, help="with --checkpoints: the images of an offer's first look, doubling at each look after (default N / 32)")
    parser.add_argument("--seed", type=seed, default=0, help="the random orders of the images (default 0)")
    parser.add_argument("--state", required=True, metavar="JSON",
                        help="the tracker's state, saved after every offer (its verdicts as JSONL beside it, .jsonl); "
                             "an existing one is resumed")


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path
    check_stream(args)
    with warnings_as_lines():
        tracker, offers = _captions_stream(args) if args.captions else _decoded_stream(args)
        for name, captions_for in offers:
            if tracker.offer(name, captions_for).stop:
                print(f"patience: {args.patience} offers in a row not better: stopped before the rest")
                break
    print(f"kept: {tracker.best}")
    print(f"guarantee: {tracker.guarantee()}")
    print(f"tokenizer: {tracker.tokenizer_name}")
    print(f"signature: {tracker.signature}")
    print(f"wrote {args.state} and {Path(args.state).with_suffix('.jsonl')}")
    print(WORDS)
    return 0


def check_stream(args: argparse.Namespace) -> None:
    """Caption files, or a folder with its decoder: one of them, every file there, before any work."""
    from pathlib import Path
    if bool(args.captions) == (args.checkpoints is not None):
        raise ValueError("give --captions FILE ... (checkpoints as caption files) or --checkpoints DIR --decode "
                         "MODULE:FUNCTION, not both")
    if args.captions:
        check_caption_files(args.captions, "--captions")
        for option, given in (("--decode", args.decode), ("--batch", args.batch), ("--budget", args.budget != 1.0)):
            if given:
                raise ValueError(f"{option}: with --checkpoints only (caption files are scored on every image)")
    elif not Path(args.checkpoints).is_dir():
        raise ValueError(f"--checkpoints {args.checkpoints}: not a folder")
    elif args.decode is None:
        raise ValueError("--checkpoints: needs --decode MODULE:FUNCTION (FUNCTION(path, image_indices) -> captions)")
    if not 0 < args.confidence < 1:
        raise ValueError(f"--confidence {args.confidence}: must lie in (0, 1)")
    if Path(args.state).is_dir():
        raise ValueError(f"--state {args.state}: is a folder, not a file")
    if args.checkpoints is not None and Path(args.state).resolve().parent == Path(args.checkpoints).resolve():
        raise ValueError(f"--state {args.state}: inside --checkpoints {args.checkpoints}, where it and its .jsonl would be "
                         "offered as checkpoints: keep it elsewhere")
    if args.checkpoints is not None and not checkpoint_files(Path(args.checkpoints)):
        raise ValueError(f"--checkpoints {args.checkpoints}: no checkpoint files")
    if args.most is not None:
        check_most(args)


def check_most(args: argparse.Namespace) -> None:
    """--most K: at most K offers, counting the checkpoints given and those the state already decided."""
    from pathlib import Path

    from ..selection.tracker import decided_names
    if args.most < 2:
        raise ValueError(f"--most {args.most}: at least 2 offers (the first is kept without a comparison)")
    names, where = ((list(args.captions), "--captions gives") if args.captions else
                    (checkpoint_files(Path(args.checkpoints)), f"--checkpoints {args.checkpoints} holds"))
    decided = decided_names(args.state)
    if len(names) > args.most:
        raise ValueError(f"--most {args.most}: {where} {len(names)} checkpoints, more than the {args.most} offers "
                         "declared (raise --most, or keep fewer files)")
    if len(decided | set(names)) > args.most:
        raise ValueError(f"--most {args.most}: {where} {len(names)} checkpoints and --state {args.state} decided "
                         f"{len(decided - set(names))} others, {len(decided | set(names))} offers, more than the "
                         f"{args.most} declared")


def _tracker(args: argparse.Namespace, references, tokenizer: str, batch: int | None = None):
    from ..selection import Tracker
    options = dict(metric=args.metric, within=args.within, alpha=round(1 - args.confidence, 12), seed=args.seed, most=args.most,
                   patience=args.patience, tokenizer=tokenizer, state=args.state)
    try:
        return Tracker(references, **options, batch=batch or args.batch, budget=args.budget)
    except ValueError as err:  # a setting the tracker refused, named as its option
        word = str(err).split(" ", 1)[0]
        option = {"alpha": "--confidence", "within": "--within", "budget": "--budget", "patience": "--patience",
                  "most": "--most", "batch": "--batch"}.get(word)
        raise ValueError(f"{option}{str(err)[len(word):]}" if option else str(err)) from None


def _captions_stream(args: argparse.Namespace):
    """Caption files: each a lookup, one look at every image (exact verdicts)."""
    from ..captionfiles import read_references
    from ..selection import read_file_race
    references = read_references(args.references, args.split)
    found = read_file_race(references, args.captions, args.tokenizer)
    refs = [[" ".join(r) for r in image] for image in found.references]
    from ..selection.race import race_signature
    tracker = _tracker(args, refs, "none", batch=len(refs))  # scored as the file race tokenized them
    tracker.tokenizer_name = found.tokenizer
    tracker.signature = race_signature(args.metric, found.tokenizer, refs)
    offers = ((str(path), _lookup([" ".join(c) for c in captions]))
              for path, captions in zip(args.captions, found.captions))
    return tracker, offers


def _lookup(captions):
    return lambda images: [captions[int(i)] for i in images]


def _decoded_stream(args: argparse.Namespace):
    """A folder's files, each decoded by the user's function (the kept one too, after a restart)."""
    import functools
    import importlib
    from pathlib import Path

    from ..captionfiles import read_references
    module, _, name = args.decode.partition(":")
    try:
        decode = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as err:
        raise ValueError(f"--decode {args.decode}: cannot import it ({err})") from None
    references = read_references(args.references, args.split)
    refs = list(references.captions.values())
    folder = Path(args.checkpoints)

    def load(checkpoint: str):
        return functools.partial(decode, str(folder / checkpoint))

    from ..postgen.tokenizers import DEFAULT_TOKENIZER
    tracker = _tracker(args, refs, args.tokenizer or references.tokenizer or DEFAULT_TOKENIZER)  # the API's too
    tracker.load = load
    return tracker, ((f, load(f)) for f in checkpoint_files(folder))


def checkpoint_files(folder) -> list[str]:
    """The names of ``folder``'s checkpoint files (not hidden ones), in the order they are offered."""
    return sorted((p.name for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")), key=natural_order)


def natural_order(name: str) -> tuple:
    """A sort key comparing runs of digits as numbers ("step-9" before "step-10"); equal numbers
    written differently ("step-09", "step-9") fall back to the plain name."""
    parts = re.split(r"(\d+)", name)  # the digit runs at the odd places
    return [int(part) if i % 2 else part for i, part in enumerate(parts)], name


COMMAND = Command("track", "keep the best checkpoint of a stream: each new checkpoint decided on as few images as it "
                           "needs (better / not better / undecided), valid over the whole stream, resumable",
                  _arguments, _run)
