"""The files users have, read one way for every command: references (COCO annotations, a
Karpathy-split JSON, the JSONL ``export-references`` writes) and captions (a COCO results JSON,
JSONL, TSV, or one caption a line).

Every reader checks its file in full before any work and raises one ``ValueError`` naming the
file and where the problem is (``FILE: line N (image X): problem``, or ``entry K`` in a JSON
list); the commands print it as ``pregen-search CMD: error: ...`` with exit code 2. Captions are
read in two steps: ``parse_captions`` checks the file's own form (nothing else needed, so a
command checks it before it opens a search or loads a model), ``match_captions`` then keys each
caption to an image of the references. Strings stay raw: each command tokenizes them with its
tokenizer.
"""
from .captions import CaptionRows, match_captions, match_samples, parse_captions, read_caption_file
from .exported import Reference, read_exported_references
from .karpathy import KarpathyFile, KarpathyImage, read_karpathy
from .references import FORMATS, ReferenceSet, read_references

__all__ = ["FORMATS", "CaptionRows", "KarpathyFile", "KarpathyImage", "Reference", "ReferenceSet", "match_captions",
           "match_samples",
           "parse_captions", "read_caption_file", "read_exported_references", "read_karpathy", "read_references"]
