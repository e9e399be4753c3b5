"""Reference probabilities and captions split over several devices equal one device's.

The multi-device runs happen in a subprocess started with four fake CPU devices
(``--xla_force_host_platform_device_count=4``), since a process's device count is fixed when
JAX starts; it computes on meshes of 1, 3 and 4 of them (3 divides neither batch size).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from pregen_jax.captioning import Captioner, RnnConfig, generate_captions, reference_probs
from pregen_jax.captioning.evaluate import round_up
from pregen_jax.captioning.train import init_params
from pregen_jax.datasets import Vocabulary

ROOT = Path(__file__).resolve().parents[1]
VOCAB = Vocabulary(["a", "red", "blue", "box", "ball", "above", "small", "ring"])
FEATURES = 5


def evaluate(devices=None, images=23) -> dict:
    """Probabilities, ranks, greedy and beam-3 captions of one small random model, in small batches.

    Images have 1-3 references of 1-13 words (several length buckets, an unknown word).
    """
    rng = np.random.default_rng(images)
    features = rng.normal(size=(images, FEATURES)).astype(np.float32)
    words = VOCAB.tokens[2:] + ["unseen"]
    captions = [[list(rng.choice(words, rng.integers(1, 14))) for _ in range(rng.integers(1, 4))]
                for _ in range(images)]
    model = Captioner("par", RnnConfig(embed_size=16, hidden_size=16, image_size=16), len(VOCAB))
    params = init_params(model, FEATURES, 7)
    ref_probs = reference_probs(model, params, features, captions, VOCAB, batch_size=10, progress=False,
                                warn_unknown=False, devices=devices)
    generate = lambda beam: generate_captions(model, params, features, VOCAB, beam, max_len=12, min_len=2,  # noqa
                                              batch_size=6, progress=False, devices=devices)
    return {"probs": np.asarray(ref_probs.probs).tolist(), "ranks": np.asarray(ref_probs.ranks).tolist(),
            "mask": np.asarray(ref_probs.mask).tolist(), "greedy": generate(1), "beam": generate(3)}


SCRIPT = """
import json, sys
import jax
from tests.test_devices import evaluate
devices = jax.local_devices()
out = {"count": len(devices), "all": evaluate(), "two images": evaluate(images=2)}
out.update({f"{n} of them": evaluate(devices[:n]) for n in (1, 3)})
json.dump(out, sys.stdout)
"""


def run_with_fake_devices(count: int) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=f"--xla_force_host_platform_device_count={count}",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def assert_same(result: dict, expected: dict, what: str) -> None:
    np.testing.assert_array_equal(result["mask"], expected["mask"], err_msg=what)
    np.testing.assert_allclose(result["probs"], expected["probs"], rtol=0, atol=1e-6, err_msg=what)
    np.testing.assert_array_equal(result["ranks"], expected["ranks"], err_msg=what)
    assert result["greedy"] == expected["greedy"], what
    assert result["beam"] == expected["beam"], what


def test_batches_split_over_four_devices_equal_one_device():
    one = json.loads(json.dumps(evaluate()))   # this process: one CPU device
    many = run_with_fake_devices(4)
    assert many["count"] == 4
    for key in ("all", "1 of them", "3 of them"):
        assert_same(many[key], one, f"{key} of 4 devices")
    # Fewer images than devices: the batch is padded, only the real rows come back.
    assert_same(many["two images"], json.loads(json.dumps(evaluate(images=2))), "2 images on 4 devices")
    # The model decodes something worth comparing: captions of several words, beam unlike greedy.
    assert all(len(c) >= 2 for c in one["greedy"]) and one["greedy"] != one["beam"]


def test_batch_sizes_round_up_to_the_device_count():
    assert [round_up(n, 1) for n in (1, 10, 512)] == [1, 10, 512]
    assert [round_up(n, 4) for n in (1, 4, 5, 250, 512)] == [4, 4, 8, 252, 512]
    assert [round_up(n, 3) for n in (10, 6)] == [12, 6]
