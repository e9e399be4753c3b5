"""The rewards inside ``jax.jit`` with the batch sharded over 4 devices equal one device: CIDEr-D,
BLEU-4, their self-critical mix and its mean-of-others advantages, the reference tables placed once
on every device (``jax.device_put(reward, NamedSharding(mesh, P()))``); called outside jit on numpy
arrays, the placed reward puts its inputs where its tables are. Its own process, as 4 CPU
devices need XLA_FLAGS before JAX starts."""
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

SCRIPT = r"""
import json
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
from pregen_jax.rewards import Bleu, CiderD, SelfCritical

assert jax.device_count() == 4, jax.devices()
rng = np.random.default_rng(6)
references = [[[*rng.integers(1, 30, rng.integers(3, 12)), *([0] if r % 2 else [])] for r in range(5)] for _ in range(16)]
images, K, T = 8, 4, 14
samples = rng.integers(0, 30, (images * K, T)).astype(np.int32)
samples[::3, 9:] = 0
image_index = rng.choice(16, images, replace=False).astype(np.int32)
for r in range(0, images * K, 2):  # every other sample a reference of its image, cut at T
    words = references[image_index[r // K]][r % 5][:T]
    samples[r] = 0
    samples[r, :len(words)] = words
critic = SelfCritical(CiderD(references), Bleu(references), cider_weight=1.0, bleu_weight=0.5)

def step(critic, samples, image_index):
    rows = jnp.repeat(image_index, K)
    return (critic.cider(samples, rows), critic.bleu(samples, rows),
            critic.advantage_over_mean(samples, image_index))

one = [np.asarray(x) for x in jax.jit(step)(critic, jnp.asarray(samples), jnp.asarray(image_index))]
mesh = Mesh(np.array(jax.devices()), ("batch",))
placed = jax.device_put(critic, NamedSharding(mesh, P()))
sharded = jax.jit(step)(placed, jax.device_put(samples, NamedSharding(mesh, P("batch", None))),
                        jax.device_put(image_index, NamedSharding(mesh, P("batch"))))
eager = placed.advantage_over_mean(samples, image_index)  # numpy in, outside jit: inputs meet the placed tables
sharded = [*sharded, eager]
one = [*one, one[2]]
print(json.dumps({
    "devices": [len(x.sharding.device_set) for x in sharded[:3]],
    "table_devices": len(placed.cider.weight.sharding.device_set),
    "max_diff": [float(np.max(np.abs(np.asarray(s) - o))) for s, o in zip(sharded, one)],
    "max_abs": [float(np.max(np.abs(o))) for o in one],
}))
"""


@pytest.mark.slow
def test_four_devices_equal_one():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["devices"] == [4, 4, 4] and result["table_devices"] == 4 and len(result["max_diff"]) == 4
    assert min(result["max_abs"]) > 0.1  # real rewards and advantages, not zeros
    for diff, size in zip(result["max_diff"], result["max_abs"]):
        assert diff <= 1e-5 * max(1.0, size), result
