"""The end-to-end search: `pregen-search demo` and `pregen-search run`."""
from .config import SearchConfig, demo_config
from .report import write_outputs
from .search import SearchResult, run_search

__all__ = ["SearchConfig", "SearchResult", "demo_config", "run_search", "write_outputs"]
