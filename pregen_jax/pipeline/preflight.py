"""The checks a search runs before any work, the same from the CLI and from Python.

``check_search`` refuses, with one clear ``ValueError`` naming the file and the problem, what would
otherwise fail late: a missing file the config names, image features missing for models that must
run, no post-gen metric that can run here, a tier module that does not import or breaks the tier
rules. ``run_search`` calls it first; the CLI calls it before it starts processes.
"""
from __future__ import annotations

from .config import SearchConfig


def check_metrics_can_run(config: SearchConfig, source: str) -> None:
    """Refuse a search none of whose post-gen metrics can run here (with some left, the search
    warns about the others in one line each and goes on)."""
    from .. import postgen
    available = postgen.metric_availability(config.postgen.options, config.postgen.metrics)
    if not any(ok for ok, _ in available.values()):
        name, (_, why) = next(iter(available.items()))
        raise ValueError(f"{source}: [postgen] metrics = {list(config.postgen.metrics)}: {name} cannot run here "
                         f"({why}) and no other post-gen metric is requested")


def check_search(config: SearchConfig, source: str = "config", tier_modules: bool = True) -> None:
    """Every up-front check of a search (``tier_modules``: import and check the user's tier modules
    too; a process of a cluster may not touch JAX before it joins, so it checks them later)."""
    config.check_files(source)  # stop words, jars, vocabulary, modules, features...
    check_metrics_can_run(config, source)
    if tier_modules and config.pregen.modules:  # the user's tiers run and are checked before any data is built
        from .space import tier_space
        tier_space(config.pregen)
