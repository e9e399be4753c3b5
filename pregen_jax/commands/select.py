"""``pregen-search select``: the best of several models on real post-gen scores: caption files alone
against a references file (``--references``), or a finished search's models with any more
(``--search``). Where every model's captions exist, every image is scored (exact, with evaluate's
paired test beside); models that must decode race (or anything, given ``--budget``)."""
from __future__ import annotations

import argparse

from .base import WORDS, Command, check_caption_files, warnings_as_lines
from .select_summary import summary_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--references", default=None, metavar="REFS",
                        help="race the --captions files alone against these references: a COCO annotation file, a "
                             "Karpathy-split JSON (see --split) or the JSONL export-references writes (no search "
                             "needed)")
    parser.add_argument("--search", default=None, help="a finished search's run folder: its models race, on its own "
                                                       "references (beside any --captions and --checkpoints)")
    parser.add_argument("--checkpoints", nargs="*", default=[], metavar="MSGPACK",
                        help="with --search: more saved models of this package to race beside the search's")
    parser.add_argument("--captions", nargs="*", default=[], metavar="FILE",
                        help="models that exist only as captions, one file each (a COCO results file, JSONL or TSV "
                             "keyed by image_id, or one caption a line in the references' image order)")
    parser.add_argument("--tokenizer", default=None, choices=("ptb", "alnum-lower", "none"),
                        help="what the metric sees: with --references, evaluate's (default ptb, COCO's; an "
                             "export-references file's own); with --search, the search's own (the default, and "
                             "the only one its scores compare with)")
    parser.add_argument("--metric", default="CIDEr", help="a post-gen metric whose corpus score is the mean of "
                                                          "per-image scores: CIDEr (default), ROUGE_L, WMD, SPICE")
    parser.add_argument("--budget", type=float, default=None,
                        help="race: share of (models x images) that may be decoded and scored (default: every "
                             "image where every model's captions exist, exact with evaluate's paired test; else "
                             "0.1; 1: every model on every image, as evaluate --idf-from all scores them)")
    parser.add_argument("--split", default="val", choices=["val", "test"],
                        help="val (default: select on validation images) or test: the search's split (with --search: "
                             "test checks a pick against the search's whole-split scores), or a Karpathy-split "
                             "JSON's (with --references)")
    parser.add_argument("--confidence", type=float, default=0.95,
                        help="1 - alpha for the whole race, its drops and its intervals each valid at every look "
                             "(confidence sequences; default 0.95)")
    parser.add_argument("--within", type=float, default=None, metavar="EPS",
                        help="stop the race as soon as the pick is shown at most EPS below the best of the models "
                             "raced (on the metric's scale, e.g. 0.02 CIDEr-D), at --confidence; the race always "
                             "prints how far below the best its pick may be")
    parser.add_argument("--seed", type=int, default=0, help="the random order of the images (default 0)")
    parser.add_argument("--assist", default="none", metavar="none",
                        help="none (the default), accepted for old scripts: assisted races (prediction-powered "
                             "estimates from a teacher-forced pass) were dropped, having no confidence sequence "
                             "valid at every look, and any other value is refused")
    parser.add_argument("--screen", action="store_true",
                        help="with --search: never decode the models the prior (validation perplexity) ranks below "
                             "the --screen-keep share")
    parser.add_argument("--screen-keep", type=float, default=0.5,
                        help="with --screen, the share of models that race, best by the prior (default 0.5)")
    parser.add_argument("--out", required=True, help="output folder (select.tsv)")
    parser.add_argument("--verbose", action="store_true",
                        help="print the whole answer (what the intervals are, hints, notes), as summary.txt has it")


def _run(args: argparse.Namespace) -> int:
    import time
    from pathlib import Path

    from .. import io
    start = time.perf_counter()
    settings = race_settings(args)
    check_sources(args)
    for path in args.checkpoints:
        if not Path(path).is_file():
            raise ValueError(f"--checkpoints: {path}: file not found")
    check_caption_files(args.captions, "--captions")  # before the search opens
    out = io.check_out_folder(args.out)
    with warnings_as_lines():
        table, selection, notes, where = (_race_files(args, settings) if args.search is None
                                          else _race_search(args, settings))
    seconds = time.perf_counter() - start
    answer = summary_lines(table, selection, seconds, where, verbose=False)
    everything = notes + summary_lines(table, selection, seconds, where)
    signature = f"signature: {table['signature'].iloc[0]}"  # how every score is computed (its tokenizer too)
    with io.staged_folder(out) as staging:
        io.write_tsv(table, staging / "select.tsv")
        io.write_text("\n".join([*everything, signature]) + "\n", staging / "summary.txt")
    print("\n".join([*(everything if args.verbose else answer), signature,
                     f"wrote {out}/select.tsv and summary.txt (the whole answer; --verbose prints it)", WORDS]))
    return 0


def check_sources(args: argparse.Namespace) -> None:
    """One source of references: --references (caption files alone) or --search, and the options
    that need a search only with one."""
    if (args.references is None) == (args.search is None):
        raise ValueError("give --references REFS (race caption files alone) or --search DIR (race a search's "
                         "models, on its references), not both" if args.references else
                         "give --references REFS and --captions A B ... (race caption files alone), or --search DIR")
    if args.search is not None:
        return
    if len(args.captions) < 2:
        raise ValueError(f"--captions: {len(args.captions)} file(s); select without a search compares at least two (one file: evaluate scores it)")
    for option, given in (("--checkpoints", bool(args.checkpoints)), ("--screen", args.screen)):
        if given:
            raise ValueError(f"{option}: needs --search (a search's models and their logged priors); caption files "
                             "race on their scores alone")


def _race_files(args: argparse.Namespace, settings):
    from ..captionfiles import read_references
    from ..selection import select_files
    references = read_references(args.references, args.split)
    table, selection, found = select_files(references, args.captions, args.metric, settings, args.tokenizer,
                                           exact=args.budget is None)
    where = (f"images of {references.source}" if len(found.images) == len(references.captions) else
             f"images of {references.source} that the files caption (of its {len(references.captions)})")
    return table, selection, [f"tokenizer: {found.tokenizer}"], where


def _race_search(args: argparse.Namespace, settings):
    from ..pipeline.finished import FinishedSearch
    from ..selection import run_select
    run = FinishedSearch.open(args.search)
    if args.tokenizer not in (None, run.tokenizer):
        raise ValueError(f"--tokenizer {args.tokenizer}: the search {args.search} scored with {run.tokenizer}; a race "
                         "beside its models uses the same (leave --tokenizer out)")
    table, selection, notes = run_select(run, args.metric, settings, args.checkpoints, args.captions,
                                         progress=not args.no_progress, exact=args.budget is None)
    notes = [*notes, f"tokenizer: {run.tokenizer} (the search's own)"]
    return table, selection, notes, f"{settings.split} images of the search"


def race_settings(args: argparse.Namespace):
    """The race's settings from the options, validated once; a bad one is named as its option."""
    import pydantic

    from ..ranking.racing import RaceSettings
    options = {"budget": "--budget", "confidence": "--confidence", "seed": "--seed", "assist": "--assist",
               "screen": "--screen-keep", "split": "--split", "within": "--within"}
    try:
        return RaceSettings(budget=0.1 if args.budget is None else args.budget, confidence=args.confidence, seed=args.seed, assist=args.assist,
                            screen=args.screen_keep if args.screen else None, split=args.split,
                            within=args.within)
    except pydantic.ValidationError as err:
        first = err.errors(include_url=False)[0]
        option = options.get(str(first["loc"][0]) if first["loc"] else "", "select")
        raise ValueError(f"{option} {first.get('input')!r}: {first['msg'].removeprefix('Value error, ')}") from None


COMMAND = Command("select", "choose the best of several models on real post-gen scores: every image where their "
                            "captions exist, else a race on growing random subsets that drops models shown worse "
                            "(caption files alone, or a search's models)",
                  _arguments, _run)
