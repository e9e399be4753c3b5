"""Ranking pre-gen metrics by how well they predict post-gen metrics, and by how well they
pick the better model.

``stats`` (Pearson over all columns at once, the spec's exclusion rule), ``table`` (reading
data-point tables strictly), ``decisions`` (model-level pairwise accuracy and Kendall tau,
held-out selection, a paired bootstrap), ``calibration`` (predicting a post-gen score from a
pre-gen metric, with a prediction interval), ``render`` (the markdown and files of a
ranking and of the decisions).
"""
from .render import decision_outputs, decisions_markdown, summary_markdown, write_files, write_ranking
from .stats import (
                    ALL,
                    MIN_GROUP_ROWS,
                    PERPLEXITY_BASELINE,
                    NotApplicable,
                    Ranking,
                    empty_ranking,
                    group_rows,
                    pearson,
                    rank,
)
from .table import KNOWN_POSTGEN, check_numeric, postgen_columns, pregen_columns, read_table

__all__ = ["ALL", "KNOWN_POSTGEN", "MIN_GROUP_ROWS", "PERPLEXITY_BASELINE", "Ranking", "check_numeric",
           "decision_outputs", "decisions_markdown", "empty_ranking", "group_rows", "NotApplicable", "pearson", "postgen_columns", "pregen_columns",
           "rank", "read_table", "summary_markdown", "write_files", "write_ranking"]
