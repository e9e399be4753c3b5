"""The PTB lexer's Unicode classes (postgen/ptb/charclasses.py) read from the jar again, and the
lexer against the jar on every char of the Basic Multilingual Plane, alone and beside letters
and digits. A sample in the suite, every char with @pytest.mark.slow."""
import pytest

from pregen_jax.postgen.ptb import charclasses, lexer
from tests.test_ptb_oracle import differences, jar_lines

LINE_ENDS = set("\n\r\x0b\x0c\u2028\u2029")  # each would split a probe line
SPACES = set(" \t\u00a0\u3000\x85") | {chr(c) for c in range(0x2000, 0x200B)}


def bmp(every: int = 1) -> list[str]:
    """Every ``every``-th char of U+0001..U+FFFF, surrogates and line ends left out."""
    return [chr(c) for c in range(1, 0x10000, every) if not 0xD800 <= c <= 0xDFFF and chr(c) not in LINE_ENDS]


def jar_classes(chars: list[str]) -> tuple[set[str], set[str], set[str]]:
    """(letters, digits, upper case) among ``chars`` as the jar's scanner classes them: a digit makes one
    number token after "+", a letter or digit one token after "1-", an upper-case char ends the
    sentence after "etc. " ("etc." then "." again)."""
    n = len(chars)
    out = jar_lines(tuple(["+" + c for c in chars] + ["1-" + c for c in chars] + ["etc. " + c + "x" for c in chars]))
    digits = {c for c, line in zip(chars, out[:n]) if " " not in line and len(line) >= 2}
    words = {c for c, line in zip(chars, out[n:2 * n]) if " " not in line and len(line) >= 3}
    # after "etc. ", a space or newline also ends the sentence; "." and U+2026 start "..." tokens
    upper = {c for c, line in zip(chars, out[2 * n:]) if line.startswith("etc. .")} - SPACES - {".", "\u2026"}
    return words - digits, digits, upper


def check_tables(chars: list[str]) -> None:
    letters, digits, upper = jar_classes(chars)
    for name, table, jar in [("LETTER", charclasses.LETTER, letters), ("DIGIT", charclasses.DIGIT, digits),
                             ("UPPERCASE", charclasses.UPPERCASE, upper)]:
        ours = {chr(c) for c in charclasses.members(table)} & set(chars)
        assert ours == jar, f"{name}: jar only {sorted(map(hex, map(ord, jar - ours)))[:20]}, " \
                            f"table only {sorted(map(hex, map(ord, ours - jar)))[:20]}"


def probe_lines(chars: list[str]) -> list[str]:
    return chars + ["x" + c + "x" for c in chars] + ["1" + c + "2" for c in chars]


def test_tables_on_a_sample(java_on_path):
    check_tables(bmp(every=7))


def test_lexer_on_a_sample_of_chars(java_on_path):
    assert not (bad := differences("bmp", probe_lines(bmp(every=23)))), bad


@pytest.mark.slow
def test_tables_on_every_char(java_on_path):
    check_tables(bmp())


@pytest.mark.slow
def test_lexer_on_every_char(java_on_path):
    assert not (bad := differences("bmp", probe_lines(bmp()))), bad


def test_shadow_keeps_the_length_and_every_ascii_char():
    text = "x\u0860y \u1885 \u24b6 1\u0de62 caf\u00e9"  # a newer letter, a jar-only letter, circled A, a newer digit
    shade = lexer.shadow(text)
    assert len(shade) == len(text) and shade != text
    assert [a for a in text if a.isascii()] == [b for b in shade if b.isascii()]
