"""A fast guard, in the default test command, that SCST raises the reward (issue 63; the slow
tests/test_scst.py test runs both baselines for 40 steps): the toy task of four images, each
described by one word, an untrained merge GRU, 20 steps of the mean baseline, CIDEr-D reward.
Most of its seconds are the step's compilation."""
import jax
import numpy as np

from pregen_jax.captioning import scst
from tests.builders import scst_toy_task


def test_twenty_scst_steps_raise_the_sampled_reward():
    model, params, features, captions, vocab = scst_toy_task()
    config = scst.ScstConfig(steps=20, images=4, samples=4, learning_rate=0.1, max_len=4, min_len=0, log_every=5,
                             baseline="mean")
    tuned, history = scst.finetune(model, params, config, features, captions, vocab, seed=0)
    rewards = [h["reward"] for h in history]
    assert [h["step"] for h in history] == [5, 10, 15, 20] and np.isfinite(rewards).all()
    assert rewards[-1] > rewards[0] + 0.5, rewards  # CIDEr-D's scale: 0..10; about 0.7 -> 2 here
    moved = [np.abs(np.asarray(a) - np.asarray(b)).max() for a, b in
             zip(jax.tree_util.tree_leaves(tuned), jax.tree_util.tree_leaves(params))]
    assert max(moved) > 0  # the parameters moved
