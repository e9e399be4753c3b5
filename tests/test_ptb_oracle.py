"""The Python PTB lexer against the jar, token for token: every raw output line of the jar (its
tokens, lower-cased, before pycocoevalcap's punctuation removal) on Flickr8k, MUTT and
where-image2 captions, hard strings and random strings. A caption that differs fails its set's
test, which names each such caption with both outputs.

The jar runs here only (postgen/ptb/jar.py through postgen/jvm.py); its output is kept for the
test session, in memory. The normal suite takes a sample of each set; @pytest.mark.slow takes
every caption (python -m pytest -m slow tests/test_ptb_oracle.py).
"""
import functools
import json
import random

import pytest

from pregen_jax.postgen.ptb import jar, lexer, one_line
from tests.conftest import shared
from tests.test_ptb import QUIRKS, SAMPLE, flickr8k_captions

HARD = list(QUIRKS) + SAMPLE + [
    "A T-shirt-wearing dog's ball... isn't it? They're here; we'll see. I'm sure you've been.",
    "He said \"hello\" and 'goodbye' to ``them''.",
    "Can't won't don't shouldn't ain't CANNOT Cannot gonna Gotta LEMME gimme wanna cannots",
    "'Twas the night. 'Tis so. 'twas 'tis",
    "(a) [b] {c} <d> -LRB- -lrb- -RRB- -LCB- -LSB-",
    "3.5kg $10 £5 €20 ¥100 ¢50 50% 1,000,000 +5 -3 3/4 1 1/2 ½ ¼ ¾ ⅓ ⅔ ⅕ 12/25/2014 10:30 555-1234 (555) 555-1234",
    "Wait... what.. really.... . . . yes…no . . . . . .",
    "em—dash en–dash a--b a---b a----b a-----b ― horizontal \u0096 \u0097",
    "café naïve résumé Zürich İstanbul ıi ß ŞĞ Ωmega ΣΊΣΥΦΟΣ ǅemal ﬁnance KELVIN \u212a",
    "http://www.example.com/path?x=1. www.google.com foo.com bar@baz.org @twitter #hashtag a.b.c.net",
    "U.S. troops. The U.S. The end. I. A. B. Mr. Smith Dr. Jones Mrs. Robinson etc. etc. Etc. And",
    "e.g. i.e. a.k.a. vs. vs Prof. Gen. Inc. Co. Ltd. Corp. Jan. Feb. Sept. Calif. Mass. Wash.",
    "ca. 1900 fig. 3 no. 5 Pty. Ltd. co. ltd Figs.2",
    "O'Neill o'clock rock'n'roll y'all Y'know ma'am ol' 'em '90s 'til c'mon nor'easter cont'd",
    "c++ C# f# C.D.s pro- anti- S&P-500 AT&T Q&A R&B AT&amp;T",
    ":) :-( ;) =D :P ^_^ x.x (^_^) <3 <<quote>> >>",
    "file.txt image.jpg script.py My.Documents a.b.c",
    "smart ‘quotes’ “double” „low‟ ‹single› «guillemets»",
    "tab\tseparated\ttext  double  spaces",
    "non-breaking\u00a0space and thin\u2009space ideographic\u3000space a \u00a0.com",
    "zero\u200bwidth and soft\u00adhyphen and soft\u00ad\u00adhyphens \u00ad",
    "emoji 😀 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and CJK 中文字 and Arabic العربية and Hindi हिन्दी",
    "**bold** __under__ ## ### @@ ~tilde ^caret |pipe \\backslash",
    "n't 's 're 've 'll 'd 'm N'T 'S dogs' toys James' hat. 'quoted' 'a",
    "50s 1990s '90s 80's 2's 1st 2nd 3rd 21st 100m 5ft 6'2\" 5'10",
    "&amp; &lt; &gt; &quot; &apos; &nbsp; &mdash; &eacute; caf&eacute;",
    "<b>bold</b> <a href=\"x y\">link</a> <br/> <!-- comment -->",
    "A man , a plan , a canal : Panama ! What ? ! ?! !! ??",
    "x.x.x The dog ... runs . A man in a red shirt.",
    "Turkish dotted İ and dotless ı: İİ ıI istanbul İSTANBUL",
    # the scanner's caseless letters: i also matches İ and ı, s the long s, k the Kelvin sign
    "'tİs 'tıs 'twaſ gİmme gımme nor'eaſter &apos;tİl x \u212aans. y CANNOT caNNot",
    # Java's final sigma looks to the end of the word (Python's at the next letter only)
    "ΟΣ-A ΟΣ-1 ΟΣ_A ΟΣ1A ΟΣ.A ΟΣ\u0300A ΟΣᄀA a@ΟΣ:A.com ΣΊΣΥΦΟΣᵢ ΣΊΣΥΦΟΣ2nd ΣΣ AΣΣ Ⓐ-Σ",
]

_ALPHABET = list("aAcdeEiIlLmnNoOpsStTxyY0123456789   .,:;-/'\"()<>@#$&=*\t\u2002\u3000\u00a0") + [
    "\u2019", "\u00ad", "&amp;", "&apos;", "n't", "'s", "'re", "www.", ".com", "https://", "Mr.", "U.S.", "etc.",
    "The ", "ca.", "no.", "Pty.", " Ltd", " 1/2", "(555) ", "555-", "12/25/", "\u2044", "<a b='c'>", "a.k.a",
    "Inc.", "e.g.", "I.", "...", ". . .", "--", "---", "C.D.s", "pro-", "c'mon", "O'", "d'", "-U.S", "S&P-500",
    ".jpg", "@x", "#y", "\u2026", "\u0096", "\u0092", "\u0093", "y'", "'90s", "'em", "cannot", "\u0130", "\u0131", "\u017f", "\u212a", "'t", "\U0001F600",
    "ΟΣ", "Σ", "\u1d62", "\u0300", "\u0860", "\u1885", "\u24b6", "\u1100", "\u4e2d", "\u0de6", "\u2160"]


def random_lines(seed: int, count: int, longest: int = 20) -> list[str]:
    """``count`` strings of up to ``longest`` pieces drawn from the lexer's awkward corners."""
    rng = random.Random(seed)
    return ["".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, longest))) for _ in range(count)]


def mixed_lines(seed: int, count: int) -> list[str]:
    """``count`` lines of up to 14 pieces: words of the hard strings, the random alphabet, tags,
    entities, abbreviations before capitals and digits, and random chars of U+0080..U+2FFF."""
    rng = random.Random(seed)
    pieces = " ".join(HARD).split(" ") + _ALPHABET + [chr(rng.randrange(0x80, 0x3000)) for _ in range(300)] + [
        '<a href="x y">', "<!-- c -->", "</b>", "&#123;", "&HT;", "&odq;", "&eacute;", "&nbsp;", "\x7f", "\x00",
        "&lt;x@y.com&gt;", "Mr. ", "U.S. ", " The ", " He ", "ca. 5", "fig.3", "pty. ltd", "co. lim", "etc. A",
        "Inc. <b>", " 1 1/2", "3\u00a01/2", "+1 (555) 123-4567", "555.123.4567", "12-25-2014", "x\u2044y",
        "www.a.com/b?c", "http://x.org/a.", "1.2.3", "3,000.50", "+.5", ";P", "x_x", "don'ts", "'n'", "Dunkin'",
        "somethin'", "c'est", "Cap'n", "S&Ls", "Ph.D.", "Ph. D.", "Jr.", "St."]
    lines = ["".join(rng.choice(["", " ", ""]).join(rng.choice(pieces) for _ in range(rng.randint(1, 14))))
             for _ in range(count)]
    return one_line(lines)  # the random chars hold line ends, which tokenize turns into spaces first


_CASING = ["Σ", "ΟΣ", "ΣΑ", "ς", "σ", "a", "A", "1", "-", "_", ".", ",", "'", '"', ":", "\u00ad", "\u2027", "\u0300",
           "\u200d", "中", "カ", "ひ", "ᵢ", "ʰ", "Ⓐ", "ⓐ", "Ⅰ", "ǅ", "ᄀ", "@", "x.com", "/", "ΐ", "\u0345", "ℌ", "ı", "İ", " "]


def casing_lines(seed: int, count: int) -> list[str]:
    """``count`` lines of up to 10 pieces around the capital sigma, whose lower case (final or not)
    Java decides by word boundaries: letters, digits, marks, joiners, CJK, cased symbols."""
    rng = random.Random(seed)
    return ["".join(rng.choice(_CASING) for _ in range(rng.randint(1, 10))) for _ in range(count)]


def mutt_captions() -> list[str]:
    """Every distinct caption of MUTT's files (originals, corruptions and references), in file order."""
    captions = []
    for path in sorted(shared("mutt").glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        captions += [item["caption"] for item in (data["annotations"] if isinstance(data, dict) else data)]
    return list(dict.fromkeys(captions))


def where_image2_captions() -> list[str]:
    """Every line of the where-image2 caption files (12 models and the human captions)."""
    return [line for path in sorted(shared("where-image2-captions").glob("flickr8k_*.txt"))
            for line in path.read_text(encoding="utf-8").splitlines()]


@functools.cache  # the jar's output, once per test session
def jar_lines(lines: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(jar.run_jar(list(lines)))


def differences(name: str, lines: list[str]) -> str:
    """One line per caption of ``lines`` on which the lexer and the jar differ (empty: none)."""
    ours, theirs = lexer.lex_lines(lines), jar_lines(tuple(lines))
    assert len(ours) == len(theirs) == len(lines)
    return "\n".join(f"{name} #{k}: {lines[k]!r}: python {a!r}, jar {b!r}"
                     for k, (a, b) in enumerate(zip(ours, theirs)) if a != b)


SETS = {
    "hard": lambda: HARD,
    "flickr8k": flickr8k_captions,
    "mutt": mutt_captions,
    "where-image2": where_image2_captions,
    "random": lambda: random_lines(0, 20_000),
    "mixed": lambda: mixed_lines(0, 20_000),
    "casing": lambda: casing_lines(0, 20_000),
}
SAMPLE_EVERY = {"hard": 1, "flickr8k": 20, "mutt": 8, "where-image2": 10, "random": 10, "mixed": 20, "casing": 20}


@pytest.mark.parametrize("name", list(SETS))
def test_lexer_equals_the_jar_on_a_sample(name, java_on_path):
    lines = SETS[name]()[::SAMPLE_EVERY[name]]
    assert not (bad := differences(name, lines)), bad


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETS))
def test_lexer_equals_the_jar_on_every_caption(name, java_on_path):
    assert not (bad := differences(name, SETS[name]())), bad


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_lexer_equals_the_jar_on_long_random_lines(seed, java_on_path):
    assert not (bad := differences(f"random-{seed}", random_lines(seed, 20_000, longest=45))), bad
    assert not (bad := differences(f"mixed-{seed}", mixed_lines(seed, 20_000))), bad


def test_every_caption_alone_at_the_end_of_the_input(java_on_path):
    """The last caption is followed by the end of the file, not a newline (some rules look past it)."""
    for caption in ["He met Mr.", "I.", "in the U.S.", "it's"]:
        assert lexer.lex_lines([caption]) == list(jar_lines((caption,)))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SETS))
def test_tokenize_equals_the_java_backend_on_every_caption(name, java_on_path):
    """The whole of ptb.tokenize_captions (line breaks, shortcuts, punctuation removal) on both backends."""
    from pregen_jax.postgen import ptb
    lines = SETS[name]()
    ours, theirs = ptb.tokenize_captions(lines, backend="python"), ptb.tokenize_captions(lines, backend="java")
    assert not (bad := [(k, lines[k], a, b) for k, (a, b) in enumerate(zip(ours, theirs)) if a != b]), bad


def test_a_tag_across_lines(java_on_path):
    """A tag's quoted attribute may hold the newline between two captions: the jar writes the tag
    newline and all, and so does the lexer (the line count stays)."""
    lines = ["A man .", "a <a b='x", "y'> z", "<b c=\"", "", "d\"> The", "<e f='g", "h"]
    assert lexer.lex_lines(lines) == list(jar_lines(tuple(lines)))
    assert lexer.lex_lines(lines)[1:3] == ["a <a\xa0b='x", "y'> z"]
