"""METEOR's normalizer: the fast path for plain lines (ASCII letters, digits, spaces: what PTB tokens
without punctuation are) gives what the full rules give."""
from hypothesis import given, settings
from hypothesis import strategies as st

from pregen_jax.postgen.meteor.normalize import PLAIN, java_lower, java_tokens, normalize, normalize_text

PLAINISH = st.text(alphabet="abzAZ09 .DOTMULTI-'|\t", max_size=30)


def full_rules(line: str) -> tuple[str, ...]:
    return tuple(java_tokens(java_lower(normalize_text(line))))


@settings(max_examples=400, deadline=None)
@given(PLAINISH)
def test_plain_lines_normalize_as_the_full_rules(line):
    assert normalize.__wrapped__(line) == full_rules(line)


def test_the_fast_path_is_taken_for_ptb_tokens_and_not_for_punctuation():
    for line in ("a man riding a horse", "two dogs  play 3 times", "", "DOTMULTI x"):
        assert normalize.__wrapped__(line) == full_rules(line)
    assert PLAIN.fullmatch("a man riding a horse") and not PLAIN.fullmatch("u.s. dogs")


@settings(max_examples=300, deadline=None)
@given(st.lists(PLAINISH, min_size=0, max_size=4), PLAINISH)
def test_a_plain_image_segments_as_the_score_line_does(references, candidate):
    """``python._segment``'s shortcut for plain images equals building and splitting the jar's line."""
    from pregen_jax.postgen.meteor.jar import score_line
    from pregen_jax.postgen.meteor.python import _segment, segment_parts
    refs, test = segment_parts(score_line(references, candidate))
    assert _segment(references, candidate) == (normalize(test), [normalize(r) for r in refs])
