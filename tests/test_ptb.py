"""The PTB tokenizer (postgen/ptb): both backends against pycocoevalcap's own PTBTokenizer, and the
Python lexer's quirks spelled out (no Java needed for those)."""
import warnings

import pytest

from pregen_jax.postgen import ptb
from pregen_jax.postgen.ptb import jar
from tests.conftest import shared

SAMPLE = ["café naïve İstanbul — “quoted” (x) {y} [z] 3.5kg $10 can't cannot gonna", "", "a\x85b ...",
          "A T-shirt-wearing dog's ball...", "  leading and trailing spaces  ", "tab\there", "'Quoted' ``text''"]


def flickr8k_captions() -> list[str]:
    """Every raw Flickr8k caption, in file order (str[40460])."""
    lines = shared("flickr8k", "Flickr8k.token.txt").read_text(encoding="utf-8").splitlines()
    return [line.split("\t", 1)[1] for line in lines if line]


def coco_tokenize(captions: list[str]) -> list[str]:
    """pycocoevalcap's PTBTokenizer on ``captions`` (one image each), in order."""
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    out = PTBTokenizer().tokenize({k: [{"caption": c}] for k, c in enumerate(captions)})
    return [out[k][0] for k in range(len(captions))]


@pytest.mark.parametrize("backend", ptb.BACKENDS)
def test_backends_equal_pycocoevalcap(backend, java_on_path):
    captions = flickr8k_captions()[::20] + SAMPLE
    assert ptb.tokenize_captions(captions, backend=backend) == coco_tokenize(captions)


@pytest.mark.parametrize("backend", ptb.BACKENDS)
def test_line_breaks_inside_a_caption_are_spaces_with_a_warning(backend, java_on_path):
    captions = ["a dog\rruns", "two\u2028lines", "form\x0cfeed and\x0bvertical tab", "last one", "para\u2029end"]
    with pytest.warns(UserWarning, match=r"4 caption\(s\).*first: caption 0"):
        out = ptb.tokenize_captions(captions, backend=backend)
    assert out == ["a dog runs", "two lines", "form feed and vertical tab", "last one", "para end"]
    # COCOEvalCap splits the line there: its later captions shift onto the wrong image
    assert coco_tokenize(captions)[:2] == ["a dog", "runs"]


# The block below makes every warning an error; one raised inside another library's at-fork handler while the
# JVM's process starts cannot propagate, so Python reports it as unraisable: not the tokenizer's warning, which
# the block would raise here.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_newlines_are_spaces_without_a_warning_and_nothing_is_written_beside_the_jar():
    folder = jar.corenlp_jar().parent
    before = sorted(p.name for p in folder.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ptb.tokenize_captions(["a\nb", "an\x85ellipsis"], backend="java") == ["a b", "an ellipsis"]
        assert ptb.tokenize_captions(["a\nb", "an\x85ellipsis"], backend="python") == ["a b", "an ellipsis"]
    assert sorted(p.name for p in folder.iterdir()) == before
    assert ptb.tokenize_captions([]) == []
    with pytest.raises(ValueError, match="unknown backend 'jvm'"):
        ptb.tokenize_captions(["a"], backend="jvm")


def test_punctuation_list_is_pycocoevalcap_s():
    from pycocoevalcap.tokenizer.ptbtokenizer import PUNCTUATIONS
    assert ptb.PUNCTUATIONS == frozenset(PUNCTUATIONS)


# What the jar gives (checked against it in tests/test_ptb_oracle.py), kept here so that the
# quirks are read and tested without Java.
QUIRKS = {
    "A T-shirt-wearing dog's ball... isn't it?": "a t-shirt-wearing dog 's ball is n't it",
    "Can't won't CANNOT Cannot gonna wanna 'Twas": "ca n't wo n't can not can not gon na wan na 't was",
    "(a) [b] {c} <d> -LRB-": "-lrb- a -rrb- -lsb- b -rsb- -lcb- c -rcb- <d> -lrb-",  # -LRB- is listed upper case
    "He said \"hello\" and 'bye'": "he said hello and bye",
    "3.5kg $10 £5 €20 ¢50 50% 1 1/2 ½ 12/25/2014 (555) 555-1234":
        "3.5 kg $ 10 # 5 $ 20 cents 50 50 % 1\xa01/2 1/2 12/25/2014 -lrb-555-rrb-\xa0555-1234",
    "em—dash a---b a-----b wait.. really....": "em dash a b a ----- b wait really",
    "İstanbul ΣΊΣΥΦΟΣ café": "i\u0307stanbul σίσυφος café",  # Java's lower case (Locale.ENGLISH)
    "U.S. troops. I. Mr. Smith etc. And e.g.": "u.s. troops i mr. smith etc. and e.g.",
    "dog., c++ AT&T :) 'em '90s": "dog. c++ at&t :-rrb- 'em '90s",  # a smiley keeps its colon
    "emoji 😀 zero\u200bwidth soft\u00adhyphen": "emoji zero width softhyphen",
}


@pytest.mark.parametrize("caption", list(QUIRKS))
def test_python_backend_quirks(caption):
    assert ptb.tokenize_captions([caption], backend="python") == [QUIRKS[caption]]


def test_description_names_the_backend():
    assert ptb.DEFAULT_BACKEND == "python"
    assert ptb.description().startswith("python: pregen-jax's own lexer, no Java")
    assert ptb.description("java").startswith("java: pycocoevalcap's Stanford CoreNLP 3.4.1 jar (")
