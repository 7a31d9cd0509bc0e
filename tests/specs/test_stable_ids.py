"""Run and episode ids of the built-in specs do not move: a rerun after an upgrade resumes the same run.

Ids hash the whole resolved spec, defaults included, so changing a default of an agent or scenario
field (a timeout, say) silently starts every run anew. These values are what the landed testbed
computes; if a change must move them, say so in the change and the notes.
"""

from __future__ import annotations

import pytest

from testbed.runner import default_run_id, plan
from testbed.specs.loader import load_scenario

RUN_IDS = {
    "probe-gsm8k": "probe-gsm8k-166c325193",
    "probe-gsm8k-perturb": "probe-gsm8k-perturb-49ffcc252f",
    "dialogue-gsm8k": "dialogue-gsm8k-e87e0ff657",
    "dialogue-personas": "dialogue-personas-1aba759317",
    "info-gathering": "info-gathering-7e830d80f1",
}


@pytest.mark.parametrize("name", sorted(RUN_IDS))
def test_builtin_run_ids_are_stable(name):
    assert default_run_id(load_scenario(name)) == RUN_IDS[name]


def test_episode_ids_are_stable():
    probe = plan(load_scenario("probe-gsm8k", limit=1))[0][1]
    assert [v.key.episode_id for v in probe] == ["38cbb06f9388028f", "aeaefbd7e1277a15", "76dd418474b5255d", "7c9db017dd2ffd9d"]
    dialogue = plan(load_scenario("dialogue-gsm8k", limit=1))[0][1]
    assert [v.key.episode_id for v in dialogue] == ["b24b94c142b98475", "8cbc5356eb0579db"]
