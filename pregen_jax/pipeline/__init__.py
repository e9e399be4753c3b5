"""The end-to-end search behind `pregen-search demo` and `pregen-search run`.

``config`` (the nested, validated TOML config), ``sources`` (data and models), ``cache``
(one stage cache), ``stages`` (one function per stage), ``search`` (their composition),
``report`` (the published run folder).
"""
from .config import SearchConfig, demo_config
from .report import write_outputs
from .search import SearchResult, run_search

__all__ = ["SearchConfig", "SearchResult", "demo_config", "run_search", "write_outputs"]
