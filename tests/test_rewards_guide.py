"""The PyTorch training loop of docs/guides/rewards.md runs as written, and real torch tensors take the
DLPack path, where torch imports.

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


def test_torch_tensors_take_the_dlpack_path():
    """Real torch tensors (CPU here; CUDA tensors take the same calls): int64 ids checked by torch
    before the cast (2**32 + 5 is refused, not read as 5), a strided view made contiguous, the
    rewards a torch tensor equal to numpy's, the self-critical advantages too."""
    torch = pytest.importorskip("torch", reason="torch is not in the lock")
    import numpy as np

    from pregen_jax.rewards import Bleu, CiderD, SelfCritical
    from tests.test_rewards_calls import IMAGES, REFERENCES, ROWS, VOCAB

    critic = SelfCritical(CiderD(REFERENCES, vocab_size=VOCAB), Bleu(REFERENCES, vocab_size=VOCAB), bleu_weight=0.5)
    rows = torch.from_numpy(ROWS)                       # int64
    got = critic(rows, torch.from_numpy(IMAGES))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and got.device == rows.device
    np.testing.assert_allclose(got.numpy(), critic(ROWS, IMAGES), rtol=1e-6)
    wide = torch.zeros((4, 9), dtype=torch.int64)
    wide[:, :5] = rows
    np.testing.assert_allclose(critic(wide[:, :5], torch.from_numpy(IMAGES)).numpy(), got.numpy(), rtol=1e-6)
    bad = rows.clone()
    bad[2, 4] = 2 ** 32 + 5
    with pytest.raises(ValueError, match=r"samples: ids must lie in 0\.\.9; found 0\.\.4294967301"):
        critic(bad, torch.from_numpy(IMAGES))
    samples = torch.tensor([[1, 2, 3, 0], [1, 2, 0, 0], [5, 6, 0, 0], [5, 5, 0, 0]])
    greedy, images = torch.tensor([[1, 2, 0], [5, 0, 0]]), torch.tensor([0, 1])
    over_greedy = critic.advantage_over_greedy(samples, greedy, images)
    assert isinstance(over_greedy, torch.Tensor) and over_greedy.shape == (4,)
    np.testing.assert_allclose(over_greedy.numpy(), critic.advantage_over_greedy(samples.numpy(), greedy.numpy(),
                                                                                 images.numpy()), rtol=1e-6)
    over_mean = critic.advantage_over_mean(samples.reshape(2, 2, 4), images)
    assert isinstance(over_mean, torch.Tensor) and over_mean.shape == (2, 2)
