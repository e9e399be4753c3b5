"""A signature beside every score, in the spirit of sacreBLEU's: one line that pins how the score was
computed, so that two numbers can be compared (or not) by their lines alone.

``CIDEr|cider-d:sigma6:x10|df:scored|nrefs:5|tok:ptb-python|backend:native|pregen-jax:0.2.0``

Fields, ``|``-separated, each ``key:value``, in this order:
  the metric's name, then its variant (``VARIANTS``: which definition, its constants and scale);
  ``df``: CIDEr-D's document frequencies (``scored``: the images scored, COCOEvalCap's; ``all``:
  every image of the references); ``nrefs``: references per image scored (``4-5`` where it varies);
  a diversity metric (``diversity.py``, ``selfcider.py``) writes its variant with the set it read
  (``set:5-samples-per-image``) and, for Self-CIDEr, ``df:all`` (every image of the references);
  ``tok``: the tokenizer (``ptb-python`` / ``ptb-java``: COCO's PTB tokenizer and its backend,
  ``alnum-lower``, ``none``); ``backend``: the metric's implementation as it ran (``native``: this
  package's, ``coco``: the reference toolkit); the package's version.
"""
from __future__ import annotations

VARIANTS = {
    "CIDEr": "cider-d:sigma6:x10",  # pycocoevalcap's CIDEr-D on its own scale (x10, not the x100 papers print)
    **{f"Bleu_{n}": f"bleu{n}:coco-corpus:closest-ref" for n in (1, 2, 3, 4)},  # summed counts, closest length
    "ROUGE_L": "rouge-l:beta1.2",
    "METEOR": "meteor-1.5:en:norm",  # Meteor 1.5 as pycocoevalcap runs it (-l en -norm)
    "SPICE": "spice-1.0",
    "WMD": "wmd:glove-6b-50d",
}


def refs_per_image(gts: dict) -> str:
    """The number of references per image of ``gts`` (image -> references): ``5``, or ``4-5`` where it varies."""
    counts = [len(refs) for refs in gts.values()]
    if not counts:
        return "0"
    low, high = min(counts), max(counts)
    return str(low) if low == high else f"{low}-{high}"


def tokenizer_field(tokenizer: str) -> str:
    """``tok``'s value: the tokenizer's short name, with the PTB tokenizer's backend."""
    if tokenizer == "ptb":
        from .ptb import DEFAULT_BACKEND
        return f"ptb-{DEFAULT_BACKEND}"
    return tokenizer


def signature(metric: str, *, tokenizer: str, nrefs: str | None, backend: str | None = None,
              idf_from: str | None = None, variant: str | None = None) -> str:
    """The signature of ``metric`` scored with ``tokenizer`` against ``nrefs`` references per image
    (``refs_per_image``; None: a metric that reads no references, a diversity metric's); ``backend``:
    the metric's as it ran (None: it has one); ``idf_from``: CIDEr-D's document-frequency rule
    (``scored`` or ``all``; CIDEr only); ``variant``: the variant field where ``VARIANTS`` has none
    (a diversity metric's: its n, the set, where its document frequencies came from)."""
    from .. import __version__
    fields = [metric, variant or VARIANTS.get(metric, metric.lower())]
    if metric == "CIDEr":
        fields.append(f"df:{idf_from or 'scored'}")
    fields += [*([f"nrefs:{nrefs}"] if nrefs is not None else []), f"tok:{tokenizer_field(tokenizer)}"]
    if backend is not None:
        fields.append(f"backend:{backend}")
    fields.append(f"pregen-jax:{__version__}")
    return "|".join(fields)
