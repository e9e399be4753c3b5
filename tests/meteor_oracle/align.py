# SPDX-FileCopyrightText: 2004, 2010 Carnegie Mellon University
#   (Meteor 1.5: Michael Denkowski and Alon Lavie)
# SPDX-FileCopyrightText: 2026 The pregen-jax authors
# SPDX-License-Identifier: LGPL-2.1-only
"""METEOR 1.5's alignment of a (test, reference) pair: a left-to-right beam search over the
reference positions, and the pair's statistics. The test oracle of the package's one search
(``pregen_jax/postgen/meteor/fast.py``, numba, every sentence length): plain Python, slow, kept
only here.

Translated step by step from Meteor 1.5's Java ``Aligner`` and ``Stage`` (edu.cmu.meteor.aligner,
by Michael Denkowski and Alon Lavie, Carnegie Mellon University), so this file is under their
licence, LGPL-2.1-only (docs/licensing.md). Behaviour kept from the jar, some of it accidental:
- matches that are the only candidate at their position and whose words no other match covers
  are fixed before the search;
- partial alignments are ranked by an integer score to which ``length x module weight`` of each
  match is added and truncated toward zero (a one-word stem match adds 0); the weights are
  ``MeteorScorer``'s alignment weights (1, 0.5, 0.5, 0.5: ``scoring.ALIGN_WEIGHTS``), not the
  ``en`` weights of the score, then by fewer chunks,
  then by a shorter distance; Python's stable sort on that key ranks as Java's stable sort does;
- a new match's distance ``|reference start - test start|`` is added to the path it extends, not
  to the new path, so later siblings (and the skip) inherit it;
- the beam keeps the 40 best paths at each position; where none survives, the best is kept.
"""
from __future__ import annotations

from pregen_jax.postgen.meteor.matchers import Match, Sentence, candidates
from pregen_jax.postgen.meteor.paraphrase import ParaphraseTable
from pregen_jax.postgen.meteor.scoring import ALIGN_WEIGHTS

BEAM = 40
STAGES = len(ALIGN_WEIGHTS)


class _Path:
    __slots__ = ("used1", "used2", "chosen", "m1", "m2", "all1", "all2", "chunks", "idx", "last_end", "distance")

    def __init__(self, used1: int, used2: int):
        self.used1, self.used2 = used1, used2        # bit masks of used test / reference words
        self.chosen: tuple | None = None              # linked list (match, rest) of the matches taken
        self.m1 = self.m2 = 0                         # weighted matches, each truncated as Java's int +=
        self.all1 = self.all2 = self.chunks = self.idx = self.distance = 0
        self.last_end = -1

    def copy(self) -> _Path:
        p = _Path.__new__(_Path)
        p.used1, p.used2, p.chosen, p.m1, p.m2 = self.used1, self.used2, self.chosen, self.m1, self.m2
        p.all1, p.all2, p.chunks, p.idx, p.last_end, p.distance = (self.all1, self.all2, self.chunks, self.idx,
                                                                   self.last_end, self.distance)
        return p


def _key(path: _Path):
    return -(path.m1 + path.m2), path.chunks, path.distance


def _span(start: int, length: int) -> int:
    return ((1 << length) - 1) << start


def _take(path: _Path, m: Match) -> None:
    """Add match ``m`` to ``path``'s counts."""
    weight = ALIGN_WEIGHTS[m[4]]
    path.m1 = int(path.m1 + m[3] * weight)
    path.m2 = int(path.m2 + m[1] * weight)
    path.all1 += m[3]
    path.all2 += m[1]
    if path.last_end != -1 and m[2] != path.last_end:
        path.chunks += 1
    path.idx = m[0] + m[1]
    path.last_end = m[2] + m[3]
    path.chosen = (m, path.chosen)


def best_alignment(found: list[list[Match]], cover1: list[int], cover2: list[int], n1: int) -> list[Match]:
    """The jar's best alignment of the candidate matches (per reference position), as matches."""
    n2 = len(found)
    fixed: dict[int, Match] = {}
    start = _Path(0, 0)
    for j in range(n2):
        if len(found[j]) == 1:
            m = found[j][0]
            if all(cover2[j + k] == 1 for k in range(m[1])) and all(cover1[m[2] + k] == 1 for k in range(m[3])):
                fixed[j] = m
                start.used2 |= _span(j, m[1])
                start.used1 |= _span(m[2], m[3])
    paths = [start]
    for current in range(n2 + 1):
        paths.sort(key=_key)
        survivors = []
        for path in paths[:BEAM]:
            if current == n2:
                if path.last_end != -1:
                    path.chunks += 1
                survivors.append(path)
                continue
            if path.used2 >> current & 1:
                if current < path.idx:
                    survivors.append(path)
                elif path.idx in fixed:
                    m = fixed[path.idx]
                    _take(path, m)
                    path.distance += abs(m[0] - m[2])
                    survivors.append(path)
                continue
            for m in found[current]:
                span2, span1 = _span(m[0], m[1]), _span(m[2], m[3])
                if path.used2 & span2 or path.used1 & span1:
                    continue
                new = path.copy()
                new.used2 |= span2
                new.used1 |= span1
                _take(new, m)
                path.distance += abs(m[0] - m[2])
                survivors.append(new)
            if path.last_end != -1:
                path.chunks += 1
                path.last_end = -1
            path.idx += 1
            survivors.append(path)
        if not survivors:
            survivors.append(paths[0])
        paths = survivors
    paths.sort(key=_key)
    out, node = [], paths[0].chosen
    while node is not None:
        out.append(node[0])
        node = node[1]
    return sorted(out)


def chunks_of(matches: list[Match]) -> int:
    """Chunks of an alignment (matches in reference order): runs contiguous in both sentences."""
    chunks, last_end, position = 0, -1, 0
    for m in matches:
        if m[0] > position and last_end != -1:  # a gap in the reference closes the chunk
            chunks += 1
            last_end = -1
        if last_end != -1 and m[2] != last_end:
            chunks += 1
        position, last_end = m[0] + m[1], m[2] + m[3]
    return chunks + (last_end != -1)


def pair_stats(test: Sentence, ref: Sentence, table: ParaphraseTable) -> tuple[float, ...]:
    """The pair's METEOR statistics (23 counts, the SCORE line's order)."""
    n1, n2 = len(test.words), len(ref.words)
    found, cover1, cover2 = candidates(test, ref, table)
    matches = best_alignment(found, cover1, cover2, n1)
    content1, content2, function1, function2 = ([0] * STAGES for _ in range(4))
    for m in matches:
        for k in range(m[3]):
            (function1 if test.function[m[2] + k] else content1)[m[4]] += 1
        for k in range(m[1]):
            (function2 if ref.function[m[0] + k] else content2)[m[4]] += 1
    row = [n1, n2, sum(test.function), sum(ref.function)]
    for stage in range(STAGES):
        row += [content1[stage], content2[stage], function1[stage], function2[stage]]
    row += [chunks_of(matches), sum(m[3] for m in matches), sum(m[1] for m in matches)]
    return tuple(float(v) for v in row)
