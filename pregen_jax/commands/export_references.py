"""``pregen-search export-references``: the test references a search scores, for a model that lives
elsewhere."""
from __future__ import annotations

import argparse

from .base import Command, warnings_as_lines


def _arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--search", help="a finished search's run folder: its references, and the fingerprint "
                                         "its manifest records (what predict compares with)")
    source.add_argument("--config", help="a search's TOML config, before or without running it ([data], [models] "
                                         "vocabulary and [pregen] units are read)")
    parser.add_argument("--out", required=True, help="the JSONL file to write: one reference a line with image_id, "
                                                     "image, ref, text, tokens (and pieces, for a subword "
                                                     "vocabulary; raw, the corpus's text, where the search "
                                                     "scores post-gen metrics with ptb); beside it, OUT's stem + .match.json: the "
                                                     "search's fingerprint, vocabulary and units")


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..external import export_for_search, match_path
    from ..pipeline import SearchConfig
    from ..pipeline.finished import FinishedSearch
    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; give the name of the JSONL file to write")
    if args.search:
        run = FinishedSearch.open(args.search)
        vocab = run.vocabulary
        config, fingerprint, tokens = run.config, run.references, list(vocab.tokens) if vocab else []
        tokenizer = run.tokenizer  # a finished search's own (older searches: alnum-lower)
    else:
        config, fingerprint, tokens = SearchConfig.load(args.config), None, None
        tokenizer = config.postgen.tokenizer
    with warnings_as_lines():  # e.g. Flickr8k test-list lines that are not images
        rows = export_for_search(config, args.out, fingerprint, tokens, tokenizer)
    images = len({row.image for row in rows})
    print(f"wrote {args.out}: {len(rows)} references of {images} test images, in RefProbs order "
          f"(image, then reference); {match_path(args.out)}: what a model's RefProbs must match (the references' "
          "fingerprint, the vocabulary and its tokens, the units)")
    return 0


COMMAND = Command("export-references", "write the test references a search scores (JSONL, in RefProbs order) "
                                       "for a model that lives elsewhere", _arguments, _run)
