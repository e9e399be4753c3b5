"""The PyTorch training loop of docs/guides/rewards.md runs as written where torch imports.

torch is not in the lock (a large wheel for one guide's example), so the test command skips it
(conftest.ALLOWED_SKIPS) and runs the same path with numpy instead: DLPack in, the caller's kind
of array out (tests/test_rewards_calls.py). With torch installed:
``python -m pytest tests/test_rewards_guide.py``.
"""
import pytest

from tests.conftest import ROOT
from tests.test_docs_examples import FENCE


def pytorch_loop() -> str:
    """The guide's one Python block that imports torch."""
    text = (ROOT / "docs" / "guides" / "rewards.md").read_text(encoding="utf-8")
    blocks = [m["code"] for m in FENCE.finditer(text) if m["lang"] == "python" and "import torch" in m["code"]]
    assert len(blocks) == 1, f"{len(blocks)} PyTorch blocks in the guide"
    return blocks[0]


def test_the_pytorch_loop_runs():
    code = pytorch_loop()
    pytest.importorskip("torch", reason="torch is not in the lock")
    exec(compile(code, "docs/guides/rewards.md (PyTorch loop)", "exec"), {})
