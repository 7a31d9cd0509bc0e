"""The Python API a notebook uses: load, run, open the store, read frames — all from `import testbed`."""

from __future__ import annotations

import subprocess
import sys

import testbed


def test_a_scenario_runs_and_reads_back_through_the_top_level_api(spec_dir, tmp_path):
    path = tmp_path / "api.sqlite"
    scenario = testbed.load_scenario(spec_dir(items={"limit": 2}))
    summary = testbed.run(scenario, store=path)
    assert (summary.planned, summary.done, summary.status) == (8, 8, "done")
    store = testbed.open_store(path, readonly=True)
    episodes = testbed.episodes_df(store, summary.run_id)
    turns = testbed.turns_df(store, summary.run_id)
    messages = testbed.messages_df(store, summary.run_id)
    assert len(episodes) == 8 and set(episodes.status) == {"done"}
    assert len(turns) == 8 and {"question", "answer", "user_turn", "user_mode", "temperature"} <= set(turns.columns)
    assert int(messages.generated_user_turn.sum()) == 8
    assert testbed.labels_df(store, summary.run_id).empty


def test_a_rerun_through_the_api_resumes(spec_dir, tmp_path):
    path = tmp_path / "api.sqlite"
    spec = spec_dir(items={"limit": 1})
    first = testbed.run(spec, store=path)
    again = testbed.run(spec, store=path)
    assert again.run_id == first.run_id and again.skipped == again.planned == 4


def test_importing_testbed_loads_nothing_heavy():
    code = "import sys, testbed; print(sorted(m for m in sys.modules if m.startswith(('testbed.', 'pandas', 'aiohttp'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_names_are_attribute_errors():
    try:
        testbed.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("an unknown name must raise AttributeError")
