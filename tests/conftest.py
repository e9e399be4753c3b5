"""Shared fixtures: the shared data folder, float64 mode, and a Ctrl-C at a chosen call."""
import contextlib
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


@pytest.fixture
def crash_on(monkeypatch):
    """``with crash_on(owner, "name"):`` makes ``owner.name`` raise KeyboardInterrupt on its
    ``call``-th call (2 unless given) inside the block, as a Ctrl-C there would, and runs the
    real function on the other calls; the real one is back after the block."""
    @contextlib.contextmanager
    def patched(owner, name: str, call: int = 2):
        real, calls = getattr(owner, name), {"n": 0}

        def crashing(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == call:
                raise KeyboardInterrupt
            return real(*args, **kwargs)
        monkeypatch.setattr(owner, name, crashing)
        try:
            yield
        finally:
            monkeypatch.setattr(owner, name, real)
    return patched
