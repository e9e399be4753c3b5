"""The example configs load, the demo configs are what `demo` runs, and a config can add tier functions."""
from pathlib import Path

import pytest

from pregen_jax import captioning, pipeline, postgen, tiers
from pregen_jax.captioning import TrainConfig
from pregen_jax.pipeline import SearchConfig, demo_config
from pregen_jax.pipeline.config import demo_config_path
from pregen_jax.pipeline.space import tier_space

CONFIGS = Path(__file__).resolve().parents[1] / "search" / "configs"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.name)
def test_example_config_loads(path):
    config = SearchConfig.load(path)
    assert SearchConfig.from_dict(__import__("tomllib").loads(config.to_toml()), "saved") == config


@pytest.mark.parametrize("name, quick", [("demo.toml", False), ("demo_quick.toml", True)])
def test_demo_configs_are_what_demo_runs(name, quick):
    """`demo` reads the files shipped in the package; search/configs/ shows the same files to copy."""
    path = demo_config_path(quick)
    assert path.is_file() and Path(pipeline.__file__).parent in path.parents
    assert (CONFIGS / name).resolve() == path.resolve()
    assert demo_config(quick) == SearchConfig.load(CONFIGS / name)


def test_defaults_have_one_home():
    """The search's training defaults are the trainer's, with or without a [training] section."""
    assert SearchConfig().training == SearchConfig.from_dict({"training": {}}).training == TrainConfig()
    assert SearchConfig().postgen.metrics == list(postgen.DEFAULT_METRICS)


def test_architectures_come_from_the_registry():
    assert SearchConfig().models.architectures == list(captioning.BUILTIN_ARCHITECTURES)
    with pytest.raises(ValueError, match=r"unknown architecture 'lstm'; registered: init, "):
        SearchConfig.from_dict({"models": {"architectures": ["init", "lstm"]}}, "x.toml")


def test_a_config_adds_user_tier_functions():
    config = SearchConfig.load(CONFIGS / "user_tiers.toml")
    try:
        space = tier_space(config.pregen)
        assert len(space) == 6 * 8 * 4 * 4
        assert "mean_trimmed_mean_normcount_top2prefix" in space.names
    finally:
        for tier, name in ((1, "top2prefix"), (3, "trimmed_mean")):
            if name in tiers.REGISTRIES[tier]:
                tiers.REGISTRIES[tier].remove(name)


def test_a_config_naming_an_unknown_tier_function(tmp_path):
    (tmp_path / "s.toml").write_text('[pregen]\nfilters = ["nosuch"]\n')
    with pytest.raises(ValueError, match="no tier-1 filter named 'nosuch'"):
        tier_space(SearchConfig.load(tmp_path / "s.toml").pregen)
