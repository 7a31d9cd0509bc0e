"""A run labelled by learned-1 is re-judged by the current learned judge without regenerating; the old labels stay readable."""

from __future__ import annotations

import asyncio

from helpers import REPO, write_yaml
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.frames import labels_df, turns_df


def test_rejudging_with_the_current_learned_judge_keeps_the_learned_1_labels(spec_dir, store, tmp_path):
    backend = ScriptedBackend(lambda r: "Why did you multiply by 3 in the second step?")
    summary = asyncio.run(run_scenario(load_scenario(spec_dir()), store, backends={"assistant": backend, "user": backend},
                                       show_progress=False))
    first = write_yaml(tmp_path / "learned-old.yaml", {"name": "learned", "kind": "learned", "task": "failure_modes",
                                                        "description": "learned-1 under the judge name it labelled with",
                                                        "model_file": str(REPO / "judges" / "models" / "learned-1.json")})
    old = asyncio.run(judge_run(store, summary.run_id, load_judge(str(first)), show_progress=False))
    episodes_before = store.episodes(summary.run_id)
    old_labels = labels_df(store, summary.run_id, "learned@" + old.identity.version, exact=True)
    new = asyncio.run(judge_run(store, summary.run_id, load_judge("learned"), show_progress=False))

    assert old.identity.version.startswith("learned-1+") and new.identity.version.startswith("learned-6+")
    assert new.scored == old.scored == len(turns_df(store, summary.run_id)) > 0 and new.unscored == 0
    assert store.episodes(summary.run_id) == episodes_before, "nothing was regenerated"
    again = labels_df(store, summary.run_id, "learned@" + old.identity.version, exact=True)
    assert again[["episode_id", "turn_index", "label"]].equals(old_labels[["episode_id", "turn_index", "label"]])
    latest = turns_df(store, summary.run_id, "learned@" + new.identity.version)
    assert latest["judge_label"].notna().all()
