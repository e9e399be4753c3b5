"""``tiers.sweep_models``: many models in one computation, sharded over devices.

The multi-device check runs in a subprocess with 4 host devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=4`` must be set before JAX starts).
"""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pregen_jax import RefProbs, tiers
from pregen_jax.strata import spec_strata

ROOT = Path(__file__).resolve().parents[1]
# A small space: these tests check batching and sharding, not the metrics (compiles faster).
SPACE = tiers.Space.from_names(filters=("none", "prefix0"), caption_scores=("prob", "pplx"),
                               image_aggregators=("mean", "median", "join"), dataset_aggregators=("mean", "median", "max"))


def random_model(images, refs=3, positions=6, seed=0):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, positions + 1, (images, refs))
    lengths[rng.random(images) < 0.2, refs - 1] = 0  # some images with a reference fewer
    mask = np.arange(positions) < lengths[..., None]
    probs = np.where(rng.random(mask.shape) < 0.1, 0.0, rng.uniform(0.05, 1, mask.shape))
    ranks = rng.choice([0, 0, 1, 4], mask.shape).astype(np.int32)
    return RefProbs(probs, ranks, mask), spec_strata(rng.random(images)).mask


def test_sweep_models_equals_sweep_per_model():
    models = [random_model(20, seed=s) for s in range(3)] + [random_model(14, refs=2, positions=4, seed=9)]
    out = tiers.sweep_models([m for m, _ in models], [s for _, s in models], SPACE)
    for (ref_probs, strata), scores in zip(models, out):
        np.testing.assert_allclose(scores, tiers.sweep(ref_probs, strata, SPACE), rtol=1e-5)
    # Two models of 20 images: segments of equal sizes, so the image rows need no mask (a constant one)
    same_size = tiers.sweep_models([m for m, _ in models[:2]], [s for _, s in models[:2]], SPACE)
    for (ref_probs, strata), scores in zip(models, same_size):
        np.testing.assert_allclose(scores, tiers.sweep(ref_probs, strata, SPACE), rtol=1e-5)
    shared = tiers.sweep_models([models[0][0], models[1][0]], models[0][1], SPACE, method="mask")
    np.testing.assert_allclose(shared[1], tiers.sweep(models[1][0], models[0][1], SPACE), rtol=1e-5)


def test_sweep_models_errors():
    ref_probs, strata = random_model(10)
    with pytest.raises(ValueError, match="at least one model"):
        tiers.sweep_models([])
    with pytest.raises(ValueError, match="2 strata for 1 models"):
        tiers.sweep_models([ref_probs], [strata, strata])
    with pytest.raises(ValueError, match="same number of partitions"):
        tiers.sweep_models([ref_probs, ref_probs], [strata, strata[:3]], method="segments")


SCRIPT = textwrap.dedent("""
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    from pregen_jax import tiers
    from tests.test_sweep_devices import SPACE, random_model

    assert jax.device_count() == 4, jax.devices()
    # 5 models (not a multiple of 4): three alike, one smaller, one with fewer references.
    models = [random_model(24, seed=s) for s in range(3)] + [random_model(17, seed=3), random_model(24, refs=2, seed=4)]
    ref_probs, strata = [m for m, _ in models], [s for _, s in models]
    for method in ("segments", "mask"):
        sharded = tiers.sweep_models(ref_probs, strata, SPACE, method=method)
        single = tiers.sweep_models(ref_probs, strata, SPACE, method=method, devices=jax.devices()[:1])
        for m, (one, many) in enumerate(zip(single, sharded)):
            np.testing.assert_allclose(many, one, rtol=1e-12, err_msg=f"{method}: model {m}, 4 devices vs 1")
    # And both equal tiers.sweep of each model (checked in float32 in the test above).
    np.testing.assert_allclose(sharded[3], tiers.sweep(ref_probs[3], strata[3], SPACE), rtol=1e-9)
    print("ok")
""")


def test_sweep_models_on_four_devices_equals_one_device():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr
