"""Shared fixtures: the shared data folder and float64 mode."""
from pathlib import Path

import jax
import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


def shared(*parts) -> Path:
    """A path under ../shared/data, skipping the test cleanly where it is absent."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not found at {path} (see ../shared/data/README.md)")
    return path


def _with_x64(enabled: bool):
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", enabled)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture
def x64():
    """Run the test with jax_enable_x64 on (float64 results), restoring the setting after."""
    yield from _with_x64(True)


@pytest.fixture
def x32():
    """Run the test with jax_enable_x64 off (float32 results), restoring the setting after."""
    yield from _with_x64(False)
