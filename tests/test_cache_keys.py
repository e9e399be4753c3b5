"""Cache keys stay where the settings did not change: the demo configs' stage settings hash as they
did before the configs were restructured (issue 34 item 4: one sizes section per model family,
the race's settings one class, path fields marked), so a user's cache of an earlier search is
reused, not recomputed. (The saved config.toml itself changed shape: [models.captioner] became
[models.rnn] and [models.transformer]; no cache key reads it whole.)

The constants are the digests at commit 91ef5b5, computed with this test's own code there.
"""
import dataclasses

import pytest

from pregen_jax.pipeline import demo_config
from pregen_jax.pipeline.cache import digest
from pregen_jax.pipeline.sources import train_settings

AT_91EF5B5 = {
    True: {"init": "20836d81740553ee", "pre": "88939c30f36a4adb", "par": "86c2c3e3e22c824a",
           "merge": "b257cb0ed9b53a96", "transformer": "e999ea0d996e4c0a", "generation": "fd7a93e8b1ebe953"},
    False: {"init": "ff3724f17b54cd60", "pre": "c865754e2755453a", "par": "48725c50043f7883",
            "merge": "1e0dd0e2a848e172", "transformer": "6588517f23a6e155", "generation": "fd7a93e8b1ebe953"},
}


@pytest.mark.parametrize("quick", [True, False])
def test_the_demo_configs_stage_keys_are_those_of_before(quick):
    config = demo_config(quick)
    keys = {arch: digest(train_settings(config, arch, 1)) for arch in config.models.architectures}
    keys["generation"] = digest(dataclasses.asdict(config.generation))
    assert keys == AT_91EF5B5[quick]


def test_an_old_captioner_section_reads_as_the_two_families_with_the_same_keys(tmp_path):
    """A config written before the families had their own sections still runs this version (with a
    warning) and gives the same models, hence the same cache keys."""
    from pregen_jax.pipeline import SearchConfig
    old = tmp_path / "old.toml"
    old.write_text('[models.captioner]\nembed_size = 64\nhidden_size = 64\nimage_size = 64\nlayers = 1\n')
    with pytest.warns(UserWarning, match=r"\[models.captioner\] is read as \[models.rnn\] and \[models.transformer\]"):
        config = SearchConfig.load(old)
    assert (config.models.rnn.embed_size, config.models.transformer.width, config.models.transformer.mlp_width) == (
        64, 64, 64)
    new = tmp_path / "new.toml"
    new.write_text("[models.rnn]\nembed_size = 64\nhidden_size = 64\nimage_size = 64\n"
                   "[models.transformer]\nwidth = 64\nmlp_width = 64\nimage_size = 64\nlayers = 1\n")
    for arch in ("merge", "transformer"):
        assert digest(train_settings(config, arch, 1)) == digest(train_settings(SearchConfig.load(new), arch, 1))
