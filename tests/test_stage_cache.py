"""A changed setting recomputes exactly the stages its output depends on, and nothing else."""
import copy
import shutil

import pytest

from pregen_jax.pipeline import SearchConfig, run_search
from tests.builders import training_config, write_config, write_training_corpus

MODEL = {"train", "refprobs", "captions", "strata", "postgen", "pregen"}
CAPTIONS = {"captions", "strata", "postgen", "pregen"}

# (setting, new value, the stages that must recompute)
CHANGES = [
    ("name", "renamed", set()),
    ("seed", 3, MODEL),
    ("data.min_count", 2, set()),       # every toy word occurs twice: the same vocabulary, nothing to redo
    ("data.min_count", 35, MODEL),      # 4 of the 11 toy words become <unk>
    ("models.captioner.embed_size", 12, MODEL),
    ("models.captioner.cell", "lstm", MODEL),
    ("models.captioner.dropout", 0.1, MODEL),
    ("training.epochs", 2, MODEL),
    ("training.batch_size", 8, MODEL),
    ("training.learning_rate", 0.01, MODEL),
    ("generation.beam_width", 1, CAPTIONS),
    ("generation.max_len", 6, CAPTIONS),
    ("generation.min_len", 1, CAPTIONS),
    ("postgen.metrics", ["CIDEr", "WMD", "ROUGE_L"], {"postgen"}),   # only the new metric
    ("postgen.metrics", ["CIDEr"], set()),
    ("postgen.stopwords", "stopwords.txt", {"postgen"}),             # WMD only
    ("pregen.compat_2018", True, {"pregen"}),
    ("pregen.group_by", "architecture", set()),
]


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cache")
    write_training_corpus(folder)
    (folder / "stopwords.txt").write_text("a the of")
    config = training_config()
    result = run_search(SearchConfig.load(write_config(folder / "search.toml", config)), folder / "out",
                        progress=False)
    return folder, config, result


def computed(result) -> set[str]:
    return {stage for stage, counts in result.stages.items() if counts["computed"]}


def test_first_run_computes_every_stage_and_a_rerun_none(first_run):
    folder, config, result = first_run
    assert computed(result) == MODEL
    again = run_search(SearchConfig.load(folder / "search.toml"), folder / "out", progress=False)
    assert computed(again) == set()
    assert again.table.equals(result.table)


# Training's own settings retrain the same stages: four of them run with -m slow only (the seed,
# learning rate and epochs stand for training's key in the test command; the budget is 30 minutes)
SLOW_CHANGES = {"models.captioner.embed_size", "models.captioner.cell", "models.captioner.dropout", "training.batch_size"}


@pytest.mark.parametrize("setting, value, stages", [
    pytest.param(*c, marks=pytest.mark.slow) if c[0] in SLOW_CHANGES else c for c in CHANGES],
    ids=[f"{c[0]}={c[1]}" for c in CHANGES])
def test_a_changed_setting_recomputes_what_depends_on_it(first_run, tmp_path, setting, value, stages):
    folder, config, _ = first_run
    for name in ("dataset_toy.json", "feats.npy", "stopwords.txt"):
        shutil.copy(folder / name, tmp_path / name)
    shutil.copytree(folder / "out", tmp_path / "out")
    changed = copy.deepcopy(config)
    *path, key = setting.split(".")
    target = changed
    for part in path:
        target = target.setdefault(part, {})
    target[key] = value
    result = run_search(SearchConfig.load(write_config(tmp_path / "search.toml", changed)), tmp_path / "out",
                        progress=False)
    assert computed(result) == stages
    for stage in stages:  # one model: one entry per stage, post-gen one per metric it recomputes
        want = len(changed["postgen"]["metrics"]) if stage == "postgen" and stages != {"postgen"} else 1
        assert result.stages[stage]["computed"] == want


def test_a_new_run_trains_only_the_new_model(first_run, tmp_path):
    folder, config, _ = first_run
    for name in ("dataset_toy.json", "feats.npy"):
        shutil.copy(folder / name, tmp_path / name)
    shutil.copytree(folder / "out", tmp_path / "out")
    changed = copy.deepcopy(config)
    changed["models"]["runs"] = 2
    result = run_search(SearchConfig.load(write_config(tmp_path / "search.toml", changed)), tmp_path / "out",
                        progress=False)
    assert result.stages["train"] == {"computed": 1, "reused": 1}
    assert result.stages["pregen"] == {"computed": 1, "reused": 1}
