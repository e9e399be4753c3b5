"""Candidate captions of known content for the built-in dataset, and their exact tuple counts.

Content is counted in tuples, as SPICE does: for every object ``(shape)``, ``(shape, colour)``
and ``(shape, size)``, and the scene's ``(background)``. A caption's tuples are those it states;
against the scene's (a set: two red circles state one (circle, red)):
correct = |caption & scene|, extra = |caption - scene|, omitted = |scene - caption|.

A candidate for an image is written in the dataset's own words (its synonyms and its list and
"a picture of" forms) and built to a design: ``omit`` of the scene's objects left out, and
``extras`` additions that are not there: an object of a shape absent from the scene, a wrong
colour on a mentioned object, or a wrong background. Sizes and the true background are
stated at random, so correct and omitted counts also vary within one design. The counts
reported are recomputed from the tuples, not taken from the design.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from pregen_jax.datasets.shapes import BACKGROUNDS, COLOURS, SHAPES, SIZE_WORDS, Scene

EXTRA_KINDS = ("object", "colour", "background")


@dataclasses.dataclass(frozen=True)
class Mention:
    """One stated object: what the caption claims about it."""

    shape: str
    colour: str | None
    size: str | None

    def tuples(self) -> set[tuple]:
        out = {("object", self.shape)}
        if self.colour:
            out.add(("colour", self.shape, self.colour))
        if self.size:
            out.add(("size", self.shape, self.size))
        return out


@dataclasses.dataclass(frozen=True)
class CandidateCaption:
    """A caption of known content for test image ``image``.

    extra_phrases: the words that carry content not in the scene (a hallucinated object's noun
    phrase, a mentioned object's noun phrase with the wrong colour, a wrong background phrase);
    missing_phrases: a full noun phrase for each object left out; kept_phrases: noun phrases
    of the correctly stated objects (a control for the Figure 3 check).
    """

    image: int
    tokens: list[str]
    omit: int
    extras: int
    correct: int
    extra: int
    omitted: int
    extra_phrases: list[list[str]]
    missing_phrases: list[list[str]]
    kept_phrases: list[list[str]]
    extra_kinds: tuple[str, ...] = ()  # the design's additions, in order: "object", "colour", "background"
    stated: frozenset = frozenset()    # the tuples the caption states (for counting against other truths)

    def counts_against(self, truth: set[tuple]) -> tuple[int, int, int]:
        """(correct, extra, omitted) of the stated tuples against another ground truth's tuples."""
        return len(self.stated & truth), len(self.stated - truth), len(truth - self.stated)


def scene_tuples(scene: Scene) -> set[tuple]:
    out = {("background", scene.background)}
    for obj in scene.objects:
        out |= Mention(obj.shape, obj.colour, obj.size).tuples()
    return out


def count_tuples(stated: set[tuple], scene: Scene) -> tuple[int, int, int]:
    """(correct, extra, omitted) of the stated tuples against the scene's."""
    truth = scene_tuples(scene)
    return len(stated & truth), len(stated - truth), len(truth - stated)


def _pick(rng, options):
    return options[int(rng.integers(len(options)))]


def noun_phrase(mention: Mention, rng, det: str = "a") -> list[str]:
    words = [det] + ([_pick(rng, SIZE_WORDS[mention.size])] if mention.size else [])
    words += ([mention.colour] if mention.colour else []) + [_pick(rng, SHAPES[mention.shape])]
    if words[0] == "a" and words[1][0] in "aeiou":
        words[0] = "an"
    return words


def background_phrase(background: str, rng) -> list[str]:
    return ["on", "a", _pick(rng, BACKGROUNDS[background]), "background"]


def make_candidate(image: int, scene: Scene, omit: int, extras: int, rng) -> CandidateCaption:
    """One caption for ``scene`` with ``omit`` objects left out and ``extras`` false additions."""
    objects = list(scene.objects)
    if not 0 <= omit < len(objects):
        raise ValueError(f"image {image}: can leave out 0..{len(objects) - 1} of its {len(objects)} objects, not {omit}")
    order = rng.permutation(len(objects))
    kept = [objects[k] for k in order[:len(objects) - omit]]
    left_out = [objects[k] for k in order[len(objects) - omit:]]
    mentions = [Mention(o.shape, o.colour, o.size if rng.random() < 0.5 else None) for o in kept]
    wrong = [False] * len(mentions)
    wrong_background = None
    kinds_drawn = []
    absent_shapes = [s for s in SHAPES if s not in {o.shape for o in objects}]
    for _ in range(extras):
        kinds = ["object"] + (["colour"] if not all(wrong) else []) + (["background"] if wrong_background is None else [])
        kind = _pick(rng, kinds)
        kinds_drawn.append(kind)
        if kind == "object":
            shape = _pick(rng, absent_shapes)
            mentions.append(Mention(shape, _pick(rng, list(COLOURS)), _pick(rng, list(SIZE_WORDS))))
            wrong.append(True)
        elif kind == "colour":
            k = _pick(rng, [k for k, w in enumerate(wrong) if not w])
            shape = mentions[k].shape
            true_colours = {o.colour for o in objects if o.shape == shape}
            mentions[k] = dataclasses.replace(mentions[k], colour=_pick(rng, [c for c in COLOURS if c not in true_colours]))
            wrong[k] = True
        else:
            wrong_background = _pick(rng, [b for b in BACKGROUNDS if b != scene.background])
    say_background = wrong_background or (scene.background if rng.random() < 0.3 else None)

    order = rng.permutation(len(mentions))
    phrases = [noun_phrase(mentions[k], rng) for k in range(len(mentions))]
    words = [] if rng.random() < 0.5 else ["a", _pick(rng, ["picture", "photo", "drawing"]), "of"]
    for position, k in enumerate(order):
        words += (["and"] if position else []) + phrases[k]
    stated = set().union(*(m.tuples() for m in mentions))
    extra_phrases = [phrases[k] for k in range(len(mentions)) if wrong[k]]
    if say_background:
        bg_words = background_phrase(say_background, rng)
        words += bg_words
        stated.add(("background", say_background))
        if wrong_background:
            extra_phrases.append(bg_words)
    correct, extra, omitted = count_tuples(stated, scene)
    missing = [noun_phrase(Mention(o.shape, o.colour, o.size), rng) for o in left_out]
    kept_phrases = [phrases[k] for k in range(len(kept)) if not wrong[k]]
    return CandidateCaption(image, words, omit, extras, correct, extra, omitted, extra_phrases, missing, kept_phrases,
                     tuple(kinds_drawn), frozenset(stated))


def make_candidates(scenes: list[Scene], max_extras: int = 3, seed: int = 0) -> list[CandidateCaption]:
    """For every image, one candidate per design (omit in 0..objects-1, extras in 0..max_extras)."""
    rng = np.random.default_rng(seed)
    return [make_candidate(n, scene, omit, extras, rng)
            for n, scene in enumerate(scenes)
            for omit in range(len(scene.objects)) for extras in range(max_extras + 1)]
