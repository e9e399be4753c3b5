"""A search's post-gen metrics: started on first use, with what besides the captions determines
each one's scores (for the stage cache), and pycocoevalcap's (gts, res) of a model's captions."""
from __future__ import annotations

from .. import postgen
from .config import PostgenConfig
from .sources import Data

SEARCH_TOKENIZERS = {
    "ptb": "ptb: pycocoevalcap's PTBTokenizer (COCO's protocol) on the corpus's raw references and on the models' "
           "captions, for the post-gen metrics; the strata and the pre-gen metrics read the models' words "
           "(alnum-lower)",
    "alnum-lower": "alnum-lower: re.findall('[a-z0-9]+', caption.lower()), the 2018 study's, for every score",
}
"""What each tokenizer a search can score with means (the manifest's and the report's description)."""

_PTB_REFERENCES: dict[int, tuple] = {}  # id(test split) -> (the split, kept alive; its references through PTB)


def gts_res(data: Data, captions, tokenizer: str = "alnum-lower") -> tuple[dict, dict]:
    """pycocoevalcap's (gts, res) of one caption per test image against the test references, as
    ``tokenizer`` gives them (``alnum-lower``: the corpus's tokens and the captions' words, as the
    strata read them; ``ptb``: the raw references and the captions through PTB). ``captions[n]``:
    image n's caption as tokens, or (``ptb``) as a string, e.g. a caption file's own text."""
    test = data.test
    if tokenizer == "alnum-lower":
        gts = {image_id: [" ".join(ref) for ref in refs] for image_id, refs in zip(test.image_ids, test.captions)}
        res = {image_id: [" ".join(c)] for image_id, c in zip(test.image_ids, captions)}
        return gts, res
    from ..postgen.ptb import tokenize_captions
    if id(test) not in _PTB_REFERENCES:
        raw = test.raw_text()
        tokens = iter(tokenize_captions([ref for refs in raw for ref in refs]))
        _PTB_REFERENCES[id(test)] = (test, {image_id: [next(tokens) for _ in refs]
                                            for image_id, refs in zip(test.image_ids, raw)})
    gts = _PTB_REFERENCES[id(test)][1]
    texts = [c if isinstance(c, str) else " ".join(c) for c in captions]  # a file's own text, or a model's words
    res = {image_id: [c] for image_id, c in zip(test.image_ids, tokenize_captions(texts))}
    return gts, res


class LazyMetrics:
    """Post-gen metrics started on first use, so a run served from the cache starts no Java."""

    def __init__(self, config: PostgenConfig, data: Data, started: dict[str, postgen.PostgenMetric] | None = None):
        """``started``: metrics already running (the caller's: ``close`` leaves them running)."""
        self.config = config
        self.data = data
        self._borrowed = dict(started or {})
        self.started: dict[str, postgen.PostgenMetric] = dict(self._borrowed)
        self._settings: dict[str, dict] = {}
        self.available = postgen.metric_availability(config.options, config.metrics)

    @property
    def names(self) -> list[str]:
        return [name for name in self.config.metrics if self.available[name][0]]

    @property
    def unavailable(self) -> dict[str, str]:
        return {name: why for name, (ok, why) in self.available.items() if not ok}

    def __getitem__(self, name: str) -> postgen.PostgenMetric:
        if name not in self.started:
            metric = postgen.REGISTRY[name].factory(self.config.options)
            if postgen.REGISTRY[name].needs_images:
                metric.bind_images(self.data.test.image_ids, self.data.test.features, self.data.features_id)
            self.started[name] = metric
        return self.started[name]

    def settings(self, name: str) -> dict:
        """What besides the captions and references determines a metric's scores (worked out once per
        metric: it reads stop-word and scorer files, and is asked for every model)."""
        if name not in self._settings:
            self._settings[name] = self._find_settings(name)
        return self._settings[name]

    def _find_settings(self, name: str) -> dict:
        spec = postgen.REGISTRY[name]  # the metric declares what changes its scores
        found = spec.cache_settings(self.config.options)
        if self.config.tokenizer != "alnum-lower":  # (alnum-lower's entries keep the keys they had)
            found["tokenizer"] = self.config.tokenizer
            found["raw_references"] = self._raw_digest()
        if spec.needs_images:
            found["images"] = self.data.split_key("test")
        return found

    def _raw_digest(self) -> str:
        """Hash of the test split's raw references (what PTB reads; the split's key hashes its tokens)."""
        if not hasattr(self, "_raw"):
            import hashlib
            import json
            self._raw = hashlib.sha256(json.dumps(self.data.test.raw_text()).encode()).hexdigest()[:16]
        return self._raw

    def close(self) -> None:
        for name, metric in self.started.items():
            if name not in self._borrowed:
                metric.close()
