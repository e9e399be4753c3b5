"""Models that live elsewhere (any framework) scored against a search: the test references they
must score, in the order a RefProbs follows (``references``, ``pregen-search export-references``),
and the fingerprint that makes their RefProbs comparable with the search's.
"""
from .references import (
    Reference,
    attach_references,
    export_references,
    read_corpus,
    read_exported_references,
    read_test_split,
)

__all__ = ["Reference", "attach_references", "export_references", "read_corpus", "read_exported_references",
           "read_test_split"]
