"""Signs that a model is degenerate, read from its captions (shown in the search's report)."""
from __future__ import annotations


def caption_quality(captions: list[list[str]]) -> dict:
    """Signs of a degenerate model: few distinct captions, or a word repeated three times in a row."""
    distinct = len({" ".join(c) for c in captions}) / len(captions)
    stutter = sum(any(c[k] == c[k + 1] == c[k + 2] for k in range(len(c) - 2)) for c in captions) / len(captions)
    problems = []
    if distinct < 0.05:
        problems.append(f"only {distinct:.1%} of its captions are distinct")
    if stutter > 0.05:
        problems.append(f"{stutter:.1%} of its captions repeat a word three times in a row")
    return {"distinct_captions": distinct, "repeating_captions": stutter, "problems": problems}
