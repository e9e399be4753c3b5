"""The per-model flow: every model of a search goes through ``flow.STAGES`` once each, in order."""
import collections
import dataclasses

import pytest

from pregen_jax.pipeline import SearchConfig, flow, run_search, sources
from pregen_jax.pipeline.cache import NoCache, StageCache
from pregen_jax.pipeline.postgen_metrics import LazyMetrics
from tests.builders import training_config, write_config, write_precomputed, write_training_corpus


def _recording(monkeypatch) -> list[tuple[str, str]]:
    """Wrap every declared stage so that each call is logged as (stage, model label)."""
    calls: list[tuple[str, str]] = []

    def wrap(stage):
        def run(ctx, model):
            label = model.label if stage.name == "train" else model.candidate.label
            calls.append((stage.name, label))
            return stage.run(ctx, model)
        return dataclasses.replace(stage, run=run)
    monkeypatch.setattr(flow, "STAGES", tuple(wrap(stage) for stage in flow.STAGES))
    return calls


def test_a_trained_model_walks_the_declared_stages_once_each(tmp_path, monkeypatch):
    write_training_corpus(tmp_path)
    config = training_config(training={"epochs": 1, "snapshot_epochs": [1]}, postgen={"metrics": ["CIDEr"]})
    config = SearchConfig.load(write_config(tmp_path / "search.toml", config))
    calls = _recording(monkeypatch)
    result = run_search(config, tmp_path / "out", progress=False, workers=0)

    assert [stage for stage, _ in calls if stage == "train"] == ["train"]  # one unit: trained once
    per_model = collections.defaultdict(list)
    for stage, label in calls:
        if stage != "train":
            per_model[label].append(stage)
    assert set(per_model) == {"par-1", "par-1-e1"} == {m.label for m in result.models}
    for stages in per_model.values():
        assert ["train", *stages] == list(flow.STAGE_NAMES)
    assert result.stages == {"train": {"computed": 1, "reused": 0},
                             **{name: {"computed": 2, "reused": 0} for name in flow.STAGE_NAMES[1:]}}


def test_score_model_runs_chosen_stages_without_a_cache(tmp_path):
    config = SearchConfig.load(write_precomputed(tmp_path, models=1, metrics=("CIDEr",)))
    data = sources.load_data(config, False)
    (candidate,) = sources.precomputed_candidates(config, data)
    settings = flow.FlowSettings(config, LazyMetrics(config.postgen, data))
    model = flow.score_model(candidate, data, settings, only={"captions", "strata", "postgen"})
    assert model.visited == ["train", "captions", "strata", "postgen"]
    assert len(model.post["CIDEr"]) == 15 and not (tmp_path / "cache").exists()
    cached = flow.score_model(candidate, data, settings, StageCache(tmp_path / "cache"),
                              only={"captions", "strata", "postgen"})
    assert cached.keys == model.keys  # NoCache works the keys out as the cache does
    with pytest.raises(ValueError, match="reads refprobs, which did not run"):
        flow.score_model(candidate, data, settings, NoCache(), only={"captions", "strata", "pregen"})
