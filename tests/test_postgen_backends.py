"""One backend vocabulary for every metric: "native" (this package's) and "coco" (the reference
toolkit); the old names ("array", METEOR's "python") still work, with a FutureWarning."""
import pytest

from pregen_jax import postgen
from pregen_jax.postgen.base import METRIC_BACKENDS, backend_name
from pregen_jax.postgen.meteor import BACKENDS as METEOR_BACKENDS
from pregen_jax.postgen.meteor import backend_for


def test_every_metric_has_the_same_two_backends():
    assert METRIC_BACKENDS == ("native", "coco") and set(METEOR_BACKENDS) == set(METRIC_BACKENDS)
    assert postgen.PostgenOptions().backend == "native"
    for metric in (postgen.BLEU(4), postgen.ROUGE_L(), postgen.CIDEr(), postgen.WMD()):
        assert metric.backend == "native"
    assert backend_for(postgen.PostgenOptions()) == "native"
    assert backend_for(postgen.PostgenOptions(backend="coco")) == "coco"


@pytest.mark.parametrize("old", ["array", "python"])
def test_old_names_still_work_with_a_warning(old):
    with pytest.warns(FutureWarning, match=f"backend '{old}' is deprecated, now called 'native'"):
        assert backend_name(old, "METEOR") == "native"


def test_an_old_config_value_and_constructor_argument_still_work():
    with pytest.warns(FutureWarning, match=r"\[postgen\] backend: backend 'array' is deprecated"):
        assert postgen.PostgenOptions(backend="array").backend == "native"
    with pytest.warns(FutureWarning, match="BLEU: backend 'array'"):
        assert postgen.BLEU(4, "array").backend == "native"
    gts, res = {1: ["a man rides a horse"]}, {1: ["a man rides a horse"]}
    with pytest.warns(FutureWarning):
        assert postgen.score("Bleu_4", gts, res, backend="array")[0] == postgen.score("Bleu_4", gts, res)[0]


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="CIDEr backend must be 'native' or 'coco', got 'jar'"):
        postgen.CIDEr("jar")
    with pytest.raises(ValueError):
        postgen.PostgenOptions(backend="python")  # never a config value: only METEOR's constructor took it
