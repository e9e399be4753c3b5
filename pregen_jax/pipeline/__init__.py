"""The end-to-end search behind `pregen-search demo` and `pregen-search run`.

``config`` (the nested, validated TOML config), ``sources`` (data and models), ``cache``
(one stage cache), ``flow`` (one model's stages, declared once, and the one entry point that
runs them), ``space``/``postgen_metrics``/``quality`` (what the stages read), ``search`` (the
flow over every model, with a post-gen worker pool), ``report`` (the published run folder and
its manifest, with ``model_level`` and ``unit_test_results``, its sections), ``finished`` (the
one reader of a finished run, which ``prediction``, ``selection``, ``external`` and ``meta`` use).
"""
from .config import SearchConfig, demo_config
from .report import write_outputs
from .search import SearchResult, run_search

__all__ = ["SearchConfig", "SearchResult", "demo_config", "run_search", "write_outputs"]
