"""The PTB tokenizer (postgen/ptb): the jar backend against pycocoevalcap's own PTBTokenizer."""
import warnings

import pytest

from pregen_jax.postgen import ptb
from tests.conftest import shared

HARD = ["café naïve İstanbul — “quoted” (x) {y} [z] 3.5kg $10 can't cannot gonna", "", "a\x85b ...",
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


def test_java_backend_equals_pycocoevalcap():
    captions = flickr8k_captions()[:3000] + HARD
    assert ptb.tokenize(captions, backend="java") == coco_tokenize(captions)


def test_line_breaks_inside_a_caption_are_spaces_with_a_warning():
    captions = ["a dog\rruns", "two\u2028lines", "form\x0cfeed and\x0bvertical tab", "last one", "para\u2029end"]
    with pytest.warns(UserWarning, match=r"4 caption\(s\).*first: caption 0"):
        out = ptb.tokenize(captions, backend="java")
    assert out == ["a dog runs", "two lines", "form feed and vertical tab", "last one", "para end"]
    # COCOEvalCap splits the line there: its later captions shift onto the wrong image
    assert coco_tokenize(captions)[:2] == ["a dog", "runs"]


def test_newlines_are_spaces_without_a_warning_and_nothing_is_written_beside_the_jar():
    folder = ptb.jar.jar_path().parent
    before = sorted(p.name for p in folder.iterdir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ptb.tokenize(["a\nb", "an\x85ellipsis"], backend="java") == ["a b", "an ellipsis"]
    assert sorted(p.name for p in folder.iterdir()) == before
    assert ptb.tokenize([]) == []


def test_punctuation_list_is_pycocoevalcap_s():
    from pycocoevalcap.tokenizer.ptbtokenizer import PUNCTUATIONS
    assert ptb.PUNCTUATIONS == frozenset(PUNCTUATIONS)
