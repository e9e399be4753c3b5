"""Models that live elsewhere (any framework) scored against a search: the test references they
must score, in the order a RefProbs follows (``references``, ``pregen-search export-references``),
and what makes their RefProbs comparable with the search's (``match``: the match file the export
writes beside the references, and ``attach_search_fingerprint``).
"""
from .match import SearchMatch, attach_search_fingerprint, export_for_search, match_path, read_match
from .references import (
    Reference,
    attach_references,
    export_references,
    read_corpus,
    read_exported_references,
    read_split,
    read_test_split,
)

__all__ = ["Reference", "SearchMatch", "attach_references", "attach_search_fingerprint", "export_for_search",
           "export_references", "match_path", "read_corpus", "read_exported_references", "read_match",
           "read_split", "read_test_split"]
