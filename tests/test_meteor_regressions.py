"""The Python METEOR on segments where it once differed from the jar, with the jar's statistics
written out (run without Java; test_meteor_python.py holds the same strings to the live jar)."""
import numpy as np
import pytest

from pregen_jax.postgen.meteor import scoring
from pregen_jax.postgen.meteor.python import PythonMeteor

# image 17084 of benchmarks/bench_evaluate.py's 40,504-image set, as the PTB tokenizer writes it
REFERENCES_17084 = ["a couple each wearing a silly mask and holding approaching a fake cigar",
                    "a attentively man and a woman are dressed as groucho marx with fake cigars",
                    "a man and a woman p dress up",
                    "a man and a woman wear funny masks and pretend to smoke large fake cigars smirks",
                    "a woman and a man contorted pose with groucho marx disguises"]
CANDIDATE_17084 = "several women and men are lifting their arms straight up above their booths heads"
# the jar's SCORE lines (pycocoevalcap's meteor-1.5.jar, -l en -norm): the image, then references 2 and 3
JAR_17084 = [(14, 8, 5, 4, 0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 2, 4, 4, 6),
             (14, 8, 5, 4, 0, 0, 2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 2, 4, 4, 6),
             (14, 16, 5, 5, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 0, 2, 3, 3, 5)]


def test_a_long_paraphrase_ranks_by_the_aligners_weights_image_17084():
    """The beam ranks a 5-word paraphrase by int(5 x 0.5) = 2, as the jar's aligner (weights 1, 0.5,
    0.5, 0.5), so "men" ~ "a man", "and", "women" ~ "a woman" (3 chunks) beat "women and men" ~ "a
    man and a woman" (1 chunk), as in the jar: 0.149166, not 0.164191."""
    meteor = PythonMeteor()
    got = [meteor.segment(REFERENCES_17084, CANDIDATE_17084),
           meteor.segment(REFERENCES_17084[2:3], CANDIDATE_17084),
           meteor.segment(REFERENCES_17084[3:4], CANDIDATE_17084)]
    assert got == [tuple(float(v) for v in row) for row in JAR_17084]
    assert scoring.aggregate(np.array(got[:1])) == pytest.approx(0.14916598, abs=1e-8)


def test_small_batches_give_the_same_statistics(monkeypatch):
    """Pairs aligned a few at a time (each batch's sentences packed on their own): the same rows."""
    from pregen_jax.postgen.meteor import python
    gts = {k: REFERENCES_17084[k:] + REFERENCES_17084[:k] for k in range(5)}
    res = {k: [CANDIDATE_17084 if k % 2 else REFERENCES_17084[k]] for k in range(5)}
    whole = PythonMeteor().stats(gts, res)
    monkeypatch.setattr(python, "BATCH", 2)
    meteor = PythonMeteor()
    assert np.array_equal(meteor.stats(gts, res), whole)
