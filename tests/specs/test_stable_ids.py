"""Run and episode ids of the built-in specs do not move: a rerun after an upgrade resumes the same run.

Ids hash the whole resolved spec, defaults included, so changing a default of an agent or scenario
field (a timeout, say) silently starts every run anew. These values are what the landed testbed
computes; if a change must move them, say so in the change and the notes.
"""

from __future__ import annotations

import pytest

from testbed.running.runner import default_run_id, plan
from testbed.specs.loader import load_scenario

RUN_IDS = {
    "probe-gsm8k": "probe-gsm8k-dfa6102d6b",
    "probe-gsm8k-perturb": "probe-gsm8k-perturb-369b0c959b",
    "dialogue-gsm8k": "dialogue-gsm8k-5924b8e36a",
    "dialogue-personas": "dialogue-personas-09c88559da",
    "info-gathering": "info-gathering-0fba0203e8",
}
"""Since issue 36 the hashes (run and episode ids) leave out where servers live (base URL, key variable, concurrency,
timeouts, port); a run made before keeps its ids (LEGACY_RUN_IDS)."""

LEGACY_RUN_IDS = {
    "probe-gsm8k": "probe-gsm8k-166c325193",
    "probe-gsm8k-perturb": "probe-gsm8k-perturb-49ffcc252f",
    "dialogue-gsm8k": "dialogue-gsm8k-e87e0ff657",
    "dialogue-personas": "dialogue-personas-1aba759317",
    "info-gathering": "info-gathering-7e830d80f1",
}
"""The ids before issue 36: a store's run made under one of them is still found and resumed."""


@pytest.mark.parametrize("name", sorted(RUN_IDS))
def test_builtin_run_ids_are_stable(name):
    assert default_run_id(load_scenario(name)) == RUN_IDS[name]


@pytest.mark.parametrize("name", sorted(LEGACY_RUN_IDS))
def test_a_run_under_a_builtin_specs_old_id_keeps_resolving(name, store):
    scenario = load_scenario(name)
    assert f"{name}-{scenario.legacy_fingerprint()}" == LEGACY_RUN_IDS[name]
    assert default_run_id(scenario, store=store) == RUN_IDS[name], "a store without the old run: the new id"
    store.begin_run(LEGACY_RUN_IDS[name], scenario=name, kind=scenario.spec.kind, spec=scenario.as_dict(),
                    fingerprint=scenario.legacy_fingerprint(), versions={}, git_revision=None, planned=1)
    assert default_run_id(scenario, store=store) == LEGACY_RUN_IDS[name]


def test_episode_ids_are_stable():
    probe = plan(load_scenario("probe-gsm8k", limit=1))[0][1]
    assert [v.key.episode_id for v in probe] == ["ca1ef12aba513c36", "da94aeea34358dde", "15a11ff547c2365e", "e5b2e674ac449456"]
    dialogue = plan(load_scenario("dialogue-gsm8k", limit=1))[0][1]
    assert [v.key.episode_id for v in dialogue] == ["36ceedf988515ad3", "409e703f2bdfdd51"]


def test_a_run_made_before_issue_36_plans_the_episode_ids_it_has():
    probe = load_scenario("probe-gsm8k", limit=1)
    legacy = probe.as_made_under(probe.legacy_fingerprint())
    assert [v.key.episode_id for v in plan(legacy)[0][1]] == ["38cbb06f9388028f", "aeaefbd7e1277a15", "76dd418474b5255d", "7c9db017dd2ffd9d"]
    dialogue = load_scenario("dialogue-gsm8k", limit=1)
    legacy = dialogue.as_made_under(dialogue.legacy_fingerprint())
    assert [v.key.episode_id for v in plan(legacy)[0][1]] == ["b24b94c142b98475", "8cbc5356eb0579db"]
    assert probe.as_made_under(probe.fingerprint()) is probe and probe.as_made_under(None) is probe
