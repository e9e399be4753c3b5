"""Cache keys stay where the settings did not change: the demo configs' stage settings hash as they
did before the configs were restructured (issue 34 item 4: the race's settings one class, path
fields marked), so a user's cache of an earlier search is reused, not recomputed.

The constants are the digests at commit 91ef5b5, computed with this test's own code there.
"""
import dataclasses

import pytest

from pregen_jax.pipeline import demo_config
from pregen_jax.pipeline.cache import digest
from pregen_jax.pipeline.sources import train_settings
from pregen_jax.settings import as_dict

AT_91EF5B5 = {
    True: {"init": "20836d81740553ee", "pre": "88939c30f36a4adb", "par": "86c2c3e3e22c824a",
           "merge": "b257cb0ed9b53a96", "transformer": "e999ea0d996e4c0a", "generation": "fd7a93e8b1ebe953",
           "config": "0124ef1f62899bac"},
    False: {"init": "ff3724f17b54cd60", "pre": "c865754e2755453a", "par": "48725c50043f7883",
            "merge": "1e0dd0e2a848e172", "transformer": "6588517f23a6e155", "generation": "fd7a93e8b1ebe953",
            "config": "6ac388e732248ae0"},
}


@pytest.mark.parametrize("quick", [True, False])
def test_the_demo_configs_stage_keys_are_those_of_before(quick):
    config = demo_config(quick)
    keys = {arch: digest(train_settings(config, arch, 1)) for arch in config.models.architectures}
    keys["generation"] = digest(dataclasses.asdict(config.generation))
    keys["config"] = digest(as_dict(config))  # the saved config.toml's content, key order included
    assert keys == AT_91EF5B5[quick]
