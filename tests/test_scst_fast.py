"""A fast guard, in the default test command, that SCST raises the reward (issue 63; the slow
tests/test_scst.py test runs both baselines for 40 steps): the toy task of four images, each
described by one word, an untrained merge GRU, 20 steps of the mean baseline, CIDEr-D reward.
Most of its seconds are the step's compilation."""
import jax
import numpy as np

from pregen_jax.captioning import RnnConfig, make_model, scst
from pregen_jax.captioning.train import init_params
from pregen_jax.datasets import Vocabulary


def test_twenty_scst_steps_raise_the_sampled_reward():
    words = ["red", "blue", "green", "black"]
    captions = [[[w, "shape"], [w, "shape"]] for w in words]
    vocab = Vocabulary.build(captions, 1)
    features = np.eye(4, dtype=np.float32)
    model = make_model("merge", RnnConfig(embed_size=16, hidden_size=16, image_size=16, dropout=0.0), len(vocab))
    params = init_params(model, 4, 0)
    config = scst.ScstConfig(steps=20, images=4, samples=4, learning_rate=0.1, max_len=4, min_len=0, log_every=5,
                             baseline="mean")
    tuned, history = scst.finetune(model, params, config, features, captions, vocab, seed=0)
    rewards = [h["reward"] for h in history]
    assert [h["step"] for h in history] == [5, 10, 15, 20] and np.isfinite(rewards).all()
    assert rewards[-1] > rewards[0] + 0.5, rewards  # CIDEr-D's scale: 0..10; about 0.7 -> 2 here
    moved = [np.abs(np.asarray(a) - np.asarray(b)).max() for a, b in
             zip(jax.tree_util.tree_leaves(tuned), jax.tree_util.tree_leaves(params))]
    assert max(moved) > 0  # the parameters moved
