"""Models' real post-gen scores, measured from their captions on a finished search's test references
(beside the predictions of ``pregen-search predict --captions``)."""
from __future__ import annotations

from ..pipeline.finished import FinishedSearch


def measured_scores(run: FinishedSearch, caption_paths: list) -> list[dict[str, float]]:
    """Each captions file's post-gen scores on the search's test references (the run's metrics that can
    run here). A file whose captions look like captions of other images (``datasets.caption_fit``)
    is scored all the same, with a warning naming the measure."""
    from ..pipeline.postgen_metrics import LazyMetrics, gts_res
    from ..pipeline.sources import load_data
    from ..refprobs import reference_fingerprint
    data = load_data(run.config, progress=False)
    if reference_fingerprint(data.test.captions, data.vocab).tokens != run.references.tokens:
        raise ValueError(f"{run.file('config.toml')}: its data no longer give the search's test references (a "
                         "corpus file changed?): rerun the search")
    from ..datasets.caption_fit import warn_if_misfit
    from ..datasets.generated import read_generated_captions
    # JSONL/TSV keyed by image id, or a caption a line; all checked before any scoring
    captions = [read_generated_captions(path, data.test.image_ids, aliases=data.test.aliases) for path in caption_paths]
    warn_if_misfit(data.test.captions, captions, [str(path) for path in caption_paths])
    if run.tokenizer == "ptb":  # PTB reads each file's own text, as evaluate does
        from ..datasets.generated import read_caption_texts
        captions = [read_caption_texts(path, data.test.image_ids, aliases=data.test.aliases) for path in caption_paths]
    metrics = LazyMetrics(run.config.postgen, data)
    try:
        out = []
        for model in captions:
            gts, res = gts_res(data, model, run.tokenizer)  # the search's own tokenizer
            out.append({name: float(metrics[name].compute_score(gts, res)[0]) for name in run.postgen
                        if name in metrics.names})
        return out
    finally:
        metrics.close()
