"""SCST (captioning.scst): its configuration, the sampled captions and their token mask, and a few
jitted steps that raise a tiny captioner's CIDEr-D reward on a toy task."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pregen_jax.captioning import RnnConfig, make_model, scst
from pregen_jax.captioning.train import init_params
from pregen_jax.settings import ValidationError
from tests.builders import scst_toy_task


def test_config_needs_two_samples_for_the_mean_baseline():
    with pytest.raises(ValidationError, match="samples >= 2"):
        scst.ScstConfig(samples=1)
    assert scst.ScstConfig(samples=1, baseline="greedy").samples == 1


def test_token_mask_covers_the_caption_and_its_end_token_only():
    tokens = jnp.array([[5, 6, 0, 0, 0], [5, 6, 7, 8, 9], [0, 0, 0, 0, 0]], jnp.int32)
    model = make_model("merge", RnnConfig(embed_size=8, hidden_size=8, image_size=8), 10)
    params = init_params(model, 3, 0)
    log_probs, mask = scst.token_log_probs(model, params, jnp.ones((3, 3)), tokens)
    np.testing.assert_array_equal(mask, [[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [1, 0, 0, 0, 0]])
    assert log_probs.shape == (3, 5) and bool(jnp.all(log_probs <= 0))


@pytest.mark.slow
@pytest.mark.parametrize(("baseline", "bleu_weight"), [("mean", 0.0), ("greedy", 0.3)])
def test_scst_steps_raise_the_reward_on_a_toy_task(baseline, bleu_weight):
    """Four images, each described by one word ("red", "blue", ...): sampled captions of an
    untrained merge GRU, rewarded by CIDEr-D (mixed with BLEU-4 in the greedy-baseline case), move
    towards each image's word within 40 steps."""
    model, params, features, captions, vocab = scst_toy_task()
    config = scst.ScstConfig(steps=40, images=4, samples=4, learning_rate=0.05, max_len=4, min_len=0, log_every=10,
                             baseline=baseline, bleu_weight=bleu_weight)
    sampled = scst.sample_tokens(model, params, jnp.asarray(features), jax.random.PRNGKey(0), 4, 2)
    ends = np.asarray(sampled) == 0
    assert not ends[:, :2].any()                                    # min_len: no end before two words
    assert (np.cumsum(ends, 1)[ends.any(1)][:, -1] >= 1).all()
    tuned, history = scst.finetune(model, params, config, features, captions, vocab, seed=0)
    rewards = [h["reward"] for h in history]
    assert np.isfinite(rewards).all() and len(history) == 4
    assert rewards[-1] > rewards[0] + 0.5 * (1 - bleu_weight), rewards  # CIDEr-D's scale: 0..10


@pytest.mark.parametrize(("settings", "args", "message"), [
    (None, ["--search", "nowhere"], "--search nowhere: no such folder"),
    ("[scst]\nsteps = 0\n", ["--search", "nowhere"], "[scst] steps"),
    ("[scst]\nbaseline = 'best'\n", ["--search", "nowhere"], "[scst] baseline"),
    ("[training]\nepochs = 1\n", ["--search", "nowhere"], "[training] is not a section of the scst settings"),
    ("[scst\n", ["--search", "nowhere"], "not valid TOML"),
])
def test_scst_command_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, settings, args, message):
    from pregen_jax import cli
    out = tmp_path / "tuned.msgpack"
    extra = []
    if settings is not None:
        (tmp_path / "scst.toml").write_text(settings)
        extra = ["--settings", str(tmp_path / "scst.toml")]
    assert cli.main(["scst", *args, "--model", "merge-1", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pregen-search scst: error: ") and message in err and "\n" not in err, err
    assert not out.exists()
