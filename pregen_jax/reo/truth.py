"""Which captions are true of which images, from the logical forms the shapes grammar emits.

A reference of the built-in dataset describes a subset of its scene, so it is often true of
other images too: those are not negatives for it. ``truth_matrix`` decides it for every
(caption, image) pair at once from ``ReferenceForm``s (the generator's own record of what each
sentence says: objects with attributes, a grid cell, a relation, a count, a background), never
by reading the words again; ``ReferenceForm.holds`` is the plain-Python oracle it is tested against.
"""
from __future__ import annotations

import itertools

import numpy as np

from ..datasets.shapes import BACKGROUNDS, COLOURS, SHAPES, ReferenceForm, Scene, relation_of

MAX_OBJECTS = 3
RELATIONS = ("above", "below", "left of", "right of", "near")
_SHAPE = {s: k for k, s in enumerate(SHAPES)}
_COLOUR = {c: k for k, c in enumerate(COLOURS)}
_SIZE = {"small": 0, "big": 1}
_BACKGROUND = {b: k for k, b in enumerate(BACKGROUNDS)}
_RELATION = {r: k for k, r in enumerate(RELATIONS)}
_PERMUTATIONS = np.array(list(itertools.permutations(range(MAX_OBJECTS))))  # [6, 3]


def _code(table, value) -> int:
    return -1 if value is None else table[value]


def encode_scenes(scenes: list[Scene]) -> dict[str, np.ndarray]:
    """Scenes -> arrays: attrs i[I, 3, 4] (shape, colour, size, cell; -1 where no object), count i[I],
    background i[I], relation i[I, 3, 3] (RELATIONS index of "a is <r> b", -1 off the objects)."""
    attrs = -np.ones((len(scenes), MAX_OBJECTS, 4), np.int64)
    relation = -np.ones((len(scenes), MAX_OBJECTS, MAX_OBJECTS), np.int64)
    for n, scene in enumerate(scenes):
        for k, o in enumerate(scene.objects):
            attrs[n, k] = (_SHAPE[o.shape], _COLOUR[o.colour], _SIZE[o.size], o.row * 3 + o.col)
            for j, other in enumerate(scene.objects):
                if j != k:
                    relation[n, k, j] = _RELATION[relation_of(o, other)]
    return {"attrs": attrs, "count": np.array([len(s.objects) for s in scenes]),
            "background": np.array([_BACKGROUND[s.background] for s in scenes]), "relation": relation}


def encode_forms(forms: list[ReferenceForm]) -> dict[str, np.ndarray]:
    """Forms -> arrays: wants i[C, 3, 4] (-1: not said), said i[C] (objects mentioned), relation i[C]
    (-1: none), count i[C] (-1), background i[C] (-1)."""
    wants = -np.ones((len(forms), MAX_OBJECTS, 4), np.int64)
    for c, form in enumerate(forms):
        for k, m in enumerate(form.objects):
            wants[c, k] = (_code(_SHAPE, m.shape), _code(_COLOUR, m.colour), _code(_SIZE, m.size),
                           -1 if m.cell is None else m.cell)
    return {"wants": wants, "said": np.array([len(f.objects) for f in forms]),
            "relation": np.array([_code(_RELATION, f.relation) for f in forms]),
            "count": np.array([-1 if f.count is None else f.count for f in forms]),
            "background": np.array([_code(_BACKGROUND, f.background) for f in forms])}


def truth_matrix(forms: list[ReferenceForm] | dict, scenes: list[Scene] | dict, chunk: int = 256) -> np.ndarray:
    """bool[C, I]: caption c (its logical form) is true of image i (its scene).

    Distinct objects must fit the mentioned ones (every assignment of the scene's objects is
    tried), the first two in the stated relation ("near" holds for any pair), and the count and
    background must agree where stated. Either argument may be given already encoded.
    """
    f = forms if isinstance(forms, dict) else encode_forms(forms)
    s = scenes if isinstance(scenes, dict) else encode_scenes(scenes)
    out = np.zeros((len(f["said"]), len(s["count"])), bool)
    near = _RELATION["near"]
    # objects assigned to mentions 0..2 under each permutation: [I, P, 3, 4]; their relations [I, P]
    assigned = s["attrs"][:, _PERMUTATIONS]
    pair_rel = s["relation"][:, _PERMUTATIONS[:, 0], _PERMUTATIONS[:, 1]]
    for start in range(0, len(out), chunk):
        part = slice(start, start + chunk)
        wants, said, rel = f["wants"][part], f["said"][part], f["relation"][part]
        fit = (wants[:, None, None] == -1) | (wants[:, None, None] == assigned[None])          # [C, I, P, 3, 4]
        fit = fit.all(axis=-1) & (assigned[None, ..., 0] >= 0)                                # [C, I, P, 3]
        fit = fit | (np.arange(MAX_OBJECTS)[None, None, None, :] >= said[:, None, None, None])
        ok = fit.all(axis=-1)                                                                  # [C, I, P]
        rel_ok = (rel[:, None, None] < 0) | (rel[:, None, None] == near) | (pair_rel[None] == rel[:, None, None])
        ok = (ok & rel_ok).any(axis=-1)                                                        # [C, I]
        count, background = f["count"][part], f["background"][part]
        ok &= (count[:, None] < 0) | (count[:, None] == s["count"][None])
        ok &= (background[:, None] < 0) | (background[:, None] == s["background"][None])
        out[part] = ok
    return out


def reference_tuples(forms: list[ReferenceForm]) -> set[tuple]:
    """The content tuples (as ``captions.scene_tuples`` counts them) that references state, united:
    (object, shape), (colour, shape, colour), (size, shape, size) per mentioned object with a shape
    (the count form's "one of them red" names no shape and adds nothing), and (background)."""
    out = set()
    for form in forms:
        for m in form.objects:
            if m.shape is None:
                continue
            out.add(("object", m.shape))
            if m.colour:
                out.add(("colour", m.shape, m.colour))
            if m.size:
                out.add(("size", m.shape, m.size))
        if form.background:
            out.add(("background", form.background))
    return out


def batch_truth(forms: list[list[ReferenceForm]], scenes: list[Scene]):
    """For training: ``truth(images i[B], which i[B]) -> bool[B, B]`` [i, c], whether the caption
    picked for batch slot c (reference ``which[c]`` of image ``images[c]``) is true of batch image i."""
    enc_scenes = encode_scenes(scenes)
    flat = [f for fs in forms for f in fs]
    enc_forms = encode_forms(flat)
    start = np.cumsum([0] + [len(fs) for fs in forms])

    def truth(images, which):
        rows = start[np.asarray(images)] + np.asarray(which)
        f = {key: value[rows] for key, value in enc_forms.items()}
        s = {key: value[np.asarray(images)] for key, value in enc_scenes.items()}
        return truth_matrix(f, s).T
    return truth
