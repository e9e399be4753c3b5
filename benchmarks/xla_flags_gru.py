"""Train a small GRU captioner in pure JAX (no flax, no optax) and print a hash of its weights.

    XLA_FLAGS="..." taskset -c 0,1 python benchmarks/xla_flags_gru.py [WEIGHTS.npy]

Data, dropout and initial weights come from jax.random (threefry: the same bits on every host) and
nothing but JAX runs, so two runs differ only where XLA's CPU code does: run it under several
``XLA_FLAGS`` (or ``taskset`` core counts), on one host or several, and compare the hashes
(docs/development.md, "Trained models across hosts"; ``xla_flags.py`` does the same with a search).
Prints ``cpu_steps=<CPU s of steps 2..150>|<XLA_FLAGS>|cores=<n>|loss=<last loss>|<sha256[:16]>``.
"""
import hashlib
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

V, E, H, F, T, B, STEPS = 48, 32, 64, 64, 12, 32, 150


def init(key):
    k = jax.random.split(key, 8)
    s = lambda shape, kk: jax.random.normal(kk, shape, jnp.float32) * (1.0 / np.sqrt(shape[0]))  # noqa: E731
    return {"emb": s((V, E), k[0]), "wx": s((E, 3 * H), k[1]), "wh": s((H, 3 * H), k[2]),
            "b": jnp.zeros(3 * H), "img": s((F, H), k[3]), "out": s((H, V), k[4]), "ln": jnp.ones(H)}


def loss_fn(p, feats, tokens, key):
    h = jnp.tanh(feats @ p["img"])
    x = p["emb"][tokens[:, :-1]]                                   # [B, T-1, E]
    keep = jax.random.bernoulli(key, 0.8, x.shape)
    x = jnp.where(keep, x / 0.8, 0.0)                              # dropout

    def step(h, xt):
        gx, gh = xt @ p["wx"] + p["b"], h @ p["wh"]
        r = jax.nn.sigmoid(gx[:, :H] + gh[:, :H])
        z = jax.nn.sigmoid(gx[:, H:2 * H] + gh[:, H:2 * H])
        n = jnp.tanh(gx[:, 2 * H:] + r * gh[:, 2 * H:])
        h = (1 - z) * n + z * h
        mu, var = h.mean(-1, keepdims=True), h.var(-1, keepdims=True)
        return h, (h - mu) * jax.lax.rsqrt(var + 1e-5) * p["ln"]
    _, hs = jax.lax.scan(step, h, jnp.swapaxes(x, 0, 1))
    logits = jnp.swapaxes(hs, 0, 1) @ p["out"]
    logp = jax.nn.log_softmax(logits)
    return -jnp.take_along_axis(logp, tokens[:, 1:, None], -1).mean()


@jax.jit
def train_step(p, m, v, t, feats, tokens, key):
    loss, g = jax.value_and_grad(loss_fn)(p, feats, tokens, key)
    m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
    v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
    p = jax.tree_util.tree_map(lambda a, mm, vv: a - 1e-2 * (mm / (1 - 0.9 ** t)) /
                               (jnp.sqrt(vv / (1 - 0.999 ** t)) + 1e-8), p, m, v)
    return p, m, v, loss


key = jax.random.PRNGKey(0)
p = init(key)
m = jax.tree_util.tree_map(jnp.zeros_like, p)
v = jax.tree_util.tree_map(jnp.zeros_like, p)
table = jax.random.normal(jax.random.PRNGKey(1), (V, F))
for t in range(1, STEPS + 1):
    if t == 2:
        start = time.process_time()
    k1, k2 = jax.random.split(jax.random.fold_in(key, t))
    tokens = jax.random.randint(k1, (B, T), 0, V)
    tokens = tokens.at[:, 1:].set((tokens[:, :-1] * 7 + 3) % V)   # learnable structure
    feats = table[tokens[:, 0]]
    p, m, v, loss = train_step(p, m, v, float(t), feats, tokens, k2)
leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(p)]
digest = hashlib.sha256(b"".join(x.tobytes() for x in leaves)).hexdigest()[:16]
np.save(sys.argv[1], np.concatenate([x.ravel() for x in leaves])) if len(sys.argv) > 1 else None
steady = time.process_time() - start
print(f"cpu_steps={steady:.2f}|{os.environ.get('XLA_FLAGS', '') or 'default'}|cores={len(os.sched_getaffinity(0))}|loss={float(loss)!r}|{digest}")
