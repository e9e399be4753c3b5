"""``pregen-search export-references``: the test references a search scores, for a model that lives
elsewhere."""
from __future__ import annotations

import argparse
import sys

from .base import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="the search's TOML config (only [data] is read, and "
                                                        "[models] vocabulary for BPE pieces)")
    parser.add_argument("--out", required=True, help="the JSONL file to write: one reference a line with image_id, "
                                                     "image, ref, text, tokens (and pieces, for a subword "
                                                     "vocabulary)")


def _run(args: argparse.Namespace) -> int:
    import warnings
    from pathlib import Path

    from ..external import export_references
    from ..pipeline import SearchConfig
    if Path(args.out).is_dir():
        raise ValueError(f"--out {args.out}: is a folder; give the name of the JSONL file to write")
    with warnings.catch_warnings(record=True) as caught:  # e.g. Flickr8k test-list lines that are not images
        warnings.simplefilter("always")
        rows = export_references(SearchConfig.load(args.config), args.out)
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)
    images = len({row.image for row in rows})
    print(f"wrote {args.out}: {len(rows)} references of {images} test images, in RefProbs order "
          "(image, then reference)")
    return 0


COMMAND = Command("export-references", "write the test references a search scores (JSONL, in RefProbs order) "
                                       "for a model that lives elsewhere", _arguments, _run)
