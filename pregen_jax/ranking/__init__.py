"""Ranking pre-gen metrics by how well they predict post-gen metrics.

``stats`` (Pearson over all columns at once, the spec's exclusion rule), ``table`` (reading
data-point tables strictly), ``render`` (the files a ranking writes).
"""
from .render import summary_markdown, write_ranking
from .stats import ALL, MIN_GROUP_ROWS, PERPLEXITY_BASELINE, Ranking, group_rows, pearson, rank
from .table import KNOWN_POSTGEN, check_numeric, postgen_columns, pregen_columns, read_table

__all__ = ["ALL", "KNOWN_POSTGEN", "MIN_GROUP_ROWS", "PERPLEXITY_BASELINE", "Ranking", "check_numeric",
           "group_rows", "pearson", "postgen_columns", "pregen_columns", "rank", "read_table", "summary_markdown",
           "write_ranking"]
