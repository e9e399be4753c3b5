"""Decoding that stops early equals the scan over every position, bit for bit.

Greedy and beam search on the four RNNs and the transformer, over a word vocabulary and a
BPE's pieces; batches where some rows end early and others run to ``max_len``; the end token
forbidden before ``min_len``; padding rows that never end; and a non-finite logit is an error.
"""
import jax
import numpy as np
import pytest

from pregen_jax.captioning import decode, evaluate, registry
from pregen_jax.captioning import train as training
from pregen_jax.captioning.models import RNN_ARCHITECTURES, RnnConfig
from pregen_jax.captioning.transformer import TransformerConfig
from pregen_jax.datasets import Vocabulary
from pregen_jax.datasets.tokenizer import train_bpe
from tests.conftest import covering

TINY = {"rnn": RnnConfig(embed_size=16, hidden_size=24, image_size=8, dropout=0.3),
        "transformer": TransformerConfig(width=16, mlp_width=24, image_size=8, dropout=0.3, layers=2, heads=4)}
FEATURES = 10
MAX_LEN, MIN_LEN = 12, 3
WORDS = ["a", "red", "blue", "box", "ball", "above", "below", "small", "big", "green", "ring"]
VOCAB = Vocabulary(WORDS[:6])


def captions(seed=0, images=40):
    rng = np.random.default_rng(seed)
    return [[list(rng.choice(WORDS, rng.integers(2, 8))) for _ in range(3)] for _ in range(images)]


BPE = train_bpe(captions(), 40)
ARCHITECTURES = (*RNN_ARCHITECTURES, "transformer")


def with_end_bias(params, bias: float):
    """``params`` with ``bias`` added to the end token's logit (captions end sooner)."""
    out = params["params"]["out"]
    return {**params, "params": {**params["params"], "out": {**out, "bias": out["bias"].at[decode.EDGE_ID].add(bias)}}}


def model_and_params(arch, vocab_size, seed=1):
    model = registry.make_model(arch, TINY["transformer" if arch == "transformer" else "rnn"], vocab_size)
    return model, training.init_params(model, FEATURES, seed)


def features(rows=16, seed=0):
    return np.random.default_rng(seed).normal(size=(rows, FEATURES)).astype(np.float32) * 3


def ended(tokens) -> np.ndarray:
    """bool[B]: the row emitted the end token within max_len."""
    return (np.asarray(tokens) == decode.EDGE_ID).any(1)


def decoders(model, params, feats, width, real=None):
    """The scan's and the stopping loop's ``Decoded`` (greedy for width 0); ``real`` defaults to every row."""
    real = np.ones(len(feats), bool) if real is None else real  # one compiled program with and without padding
    if width == 0:
        return [decode.decode_greedy(model, params, feats, MAX_LEN, MIN_LEN, stop, real) for stop in (False, True)]
    return [decode.decode_beams(model, params, feats, width, MAX_LEN, MIN_LEN, stop, real) for stop in (False, True)]


def assert_same(scan, loop, rows=slice(None)):
    np.testing.assert_array_equal(np.asarray(loop.tokens)[rows], np.asarray(scan.tokens)[rows])
    if scan.scores is not None:  # bit for bit, not to a tolerance
        assert np.asarray(loop.scores)[rows].tobytes() == np.asarray(scan.scores)[rows].tobytes()


@pytest.mark.parametrize("arch, vocab", covering(  # every architecture and both vocabularies; all 10 with -m slow
    [(arch, vocab) for arch in ARCHITECTURES for vocab in ("word", "bpe")],
    [("init", "bpe"), ("pre", "word"), ("par", "bpe"), ("merge", "word"), ("transformer", "word")]))
def test_stopping_equals_the_scan_bit_for_bit(arch, vocab):
    size = len(VOCAB) if vocab == "word" else len(BPE)
    model, params = model_and_params(arch, size)
    feats = features()
    # An end bias where some rows end early and others run to max_len (checked below).
    for bias in np.arange(-2.0, 6.0, 0.1):
        biased = with_end_bias(params, bias)
        if all(0 < ended(decoders(model, biased, feats, w)[0].tokens).sum() < len(feats) for w in (0, 3)):
            break
    else:
        pytest.fail("no end bias gives a batch of rows that end and rows that run to max_len")
    for width in (0, 3):  # greedy, beam 3 (beam 1 equals greedy: test_models)
        scan, loop = decoders(model, biased, feats, width)
        assert_same(scan, loop)
        assert (np.asarray(loop.tokens)[:, :MIN_LEN] != decode.EDGE_ID).all()  # min_len forces the first words
        # The rows that run to max_len made padding: the loop stops when the real rows have ended.
        real = ended(scan.tokens)
        scan_real, loop_real = decoders(model, biased, feats, width, real)
        assert_same(scan, loop_real, real)
        last_end = int(np.argmax(np.asarray(scan.tokens)[real] == decode.EDGE_ID, 1).max())
        # Greedy stops right after the last real row's end; beam search once beam 0 has ended,
        # which may be later (a live beam can lead for a while before it falls behind).
        steps = int(loop_real.steps[0])
        assert (steps == last_end + 1 if width == 0 else steps >= last_end + 1) and int(scan_real.steps[0]) == MAX_LEN
        assert steps < MAX_LEN or width > 0
    # Every row ends early: the loop stops early with every row real.
    scan, loop = decoders(model, with_end_bias(params, 8.0), feats, 3)
    assert_same(scan, loop)
    assert int(loop.steps[0]) < MAX_LEN


def test_beam_zero_is_final_once_ended_although_other_beams_live():
    """The beam rule (beam 0 of every image ended) stops while other beams are still live; their
    scores, plain sums of log-probabilities, can only fall, so beam 0 stays first."""
    model, params = model_and_params("merge", len(VOCAB))
    feats = features()
    @jax.jit
    def beam_loops(params):
        beams = decode.init_beams(decode.start(model, params, feats, MAX_LEN), len(feats), 3, MAX_LEN)
        step = lambda decoder, prev, beams, t: decode.decode_step(model, params, decoder, prev)  # noqa: E731
        return [decode.beam_loop(step, beams, MAX_LEN, MIN_LEN, stop) for stop in (False, True)]

    for bias in np.arange(0.0, 6.0, 0.5):
        (scan, _), (stopped, steps) = beam_loops(with_end_bias(params, bias))
        if int(steps) < MAX_LEN and not np.asarray(stopped.done).all():
            break
    else:
        pytest.fail("no end bias stops the loop with live beams")
    np.testing.assert_array_equal(stopped.tokens[:, 0], scan.tokens[:, 0])
    np.testing.assert_array_equal(stopped.scores[:, 0], scan.scores[:, 0])
    assert (np.diff(np.asarray(scan.scores), axis=1) <= 0).all()  # sorted best first


def test_generate_captions_with_padding_rows():
    """generate_captions pads its last batch; padding never holds the loop up, captions stay the scan's."""
    vocabulary = BPE
    model, params = model_and_params("transformer", len(vocabulary))
    params = with_end_bias(params, 2.0)
    feats = features(13)
    for width in (1, 3):
        args = (model, params, feats, vocabulary, width, MAX_LEN, MIN_LEN, 8)
        scan, scan_steps = evaluate.generate_captions(*args, progress=False, stop_early=False, with_steps=True)
        loop, loop_steps = evaluate.generate_captions(*args, progress=False, with_steps=True)
        assert loop == scan and scan_steps == [MAX_LEN, MAX_LEN]
        assert all(steps <= MAX_LEN for steps in loop_steps)


def test_a_non_finite_logit_is_an_error_not_a_caption():
    model, params = model_and_params("par", len(VOCAB))
    feats = features(6)
    feats[4] = np.nan  # row 4's logits are NaN
    for stop in (False, True):
        with pytest.raises(ValueError, match=r"non-finite logit \(NaN or \+inf\) for row 4 \(1 of 6 rows\)"):
            decode.greedy(model, params, feats, MAX_LEN, MIN_LEN, stop)
        with pytest.raises(ValueError, match=r"non-finite logit .* for row 4"):
            decode.beam_search(model, params, feats, 3, MAX_LEN, MIN_LEN, stop)
    real = np.arange(6) != 4  # as a padding row it does not count
    assert decode.greedy(model, params, feats, MAX_LEN, MIN_LEN, real=real).shape == (6, MAX_LEN)
    with pytest.raises(ValueError, match=r"generation \(images 0-5\): the model gave a non-finite logit"):
        evaluate.generate_captions(model, params, feats, VOCAB, 3, MAX_LEN, MIN_LEN, progress=False)
    inf = with_end_bias(params, np.inf)  # +inf is no better: it would win every top-k
    with pytest.raises(ValueError, match="non-finite logit"):
        decode.beam_search(model, inf, features(6), 3, MAX_LEN, MIN_LEN)
