"""A stored τ² run reads without the τ² package: its simulated-user faults were stored when the run finished (and the
judge's role drift when it judged), so its report, its comparison columns and replay's fault marks come out the same
in a process where `import tau2` fails."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from helpers import REPO  # noqa: E402
from tau2_faulty_run import DONE, INVENTED, STOPPED, faulty_run  # noqa: E402
from testbed.analysis.tau2.stored_faults import DETECTOR, RULES  # noqa: E402
from testbed.store import Store  # noqa: E402
from testbed.store.labels import JudgeIdentity, write_labels  # noqa: E402
from testbed.store.records import LabelRow  # noqa: E402
from testbed.store.user_faults import faults_df  # noqa: E402

WHO = JudgeIdentity("local", "v1")

READ = textwrap.dedent("""
    import json, sys
    sys.modules["tau2"] = None
    import testbed
    from testbed.analysis.reports.compare import compare_frameworks
    from testbed.analysis.reports.compare_render import columns_for
    from testbed.analysis.reports.probe import report_frame
    from testbed.replay.catalog import RunCatalog
    from testbed.replay.episode_view import episode_view
    from testbed.store import Store
    from testbed.store.labels import JudgeIdentity

    path, run_id = sys.argv[1:3]
    judge = JudgeIdentity("local", "v1")
    store = Store(path, readonly=True)
    report = report_frame(store, run_id, judge)
    frame = compare_frameworks(store, {"native": run_id}, {"native": judge})
    catalog = RunCatalog.load(store, run_id)
    marks = {}
    for episode in catalog.episodes:
        view = episode_view(store, catalog, episode, judge)
        marks[episode.key.item_id] = [[f.turn_index, f.kind, f.evidence] for t in view.turns for f in t.faults]
    print(json.dumps({
        "fault_any": report.fault_any.tolist(), "fault_role_drift": report.fault_role_drift.tolist(),
        "compare_fault_any": frame.fault_any.tolist(), "headers": [h for h, _ in columns_for(frame)],
        "rows": {r.item_id: list(r.faults) for r in catalog.rows(judge)}, "problem": catalog.fault_problem,
        "marks": marks, "tau2_imported": any(m == "tau2" or m.startswith("tau2.") for m in sys.modules if sys.modules[m] is not None),
    }))
""")


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    """(store path, run id) of a τ² mock-domain run of the two scripted episodes, judged (a drift label on the clean
    episode's last user turn) and its judge's faults stored as `testbed judge` stores them."""
    folder = tmp_path_factory.mktemp("no-tau2")
    path = folder / "store.sqlite"
    store = Store(path)
    run_id, _ = asyncio.run(faulty_run(folder, store))
    done = next(e for e in store.episodes(run_id) if e.key.item_id == DONE)
    users = [m.turn_index for m in store.messages(run_id, done.key.episode_id) if m.role == "user" and m.spoken]
    write_labels(store, run_id, WHO, [LabelRow(done.key.episode_id, users[-1], "scored", "echo_assistant", False)])
    DETECTOR.store_judged_faults(store, run_id, WHO)
    store.close()
    return path, run_id, users[-1]


def test_the_run_loop_stored_the_rules_faults_with_their_identity(judged_run):
    path, run_id, _ = judged_run
    store = Store(path, readonly=True)
    stored = faults_df(store, run_id)
    assert sorted(stored.kind) == ["invented_fact", "premature_stop"] and set(stored.detector) == {str(RULES)}
    assert "role_drift" in set(faults_df(store, run_id, WHO).kind) and "role_drift" not in set(stored.kind)


def test_report_compare_and_replay_read_a_stored_tau2_run_with_tau2_blocked(judged_run):
    path, run_id, drift_turn = judged_run
    done = subprocess.run([sys.executable, "-c", READ, str(path), run_id], capture_output=True, text=True, cwd=REPO,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    read = json.loads(done.stdout)
    assert not read["tau2_imported"] and read["problem"] == ""
    assert read["fault_any"] == [1.0] and read["fault_role_drift"] == [0.5], "both episodes faulted, one by drift"
    assert read["compare_fault_any"] == [1.0]
    assert "user fault (95% CI)" in read["headers"] and "reward (95% CI)" in read["headers"]
    assert read["rows"] == {STOPPED: ["premature_stop", "invented_fact"], DONE: ["role_drift"]}
    assert [kind for _, kind, _ in read["marks"][STOPPED]] == ["invented_fact", "premature_stop"]
    assert read["marks"][STOPPED][0][2] == INVENTED
    assert read["marks"][DONE] == [[drift_turn, "role_drift", "echo_assistant"]]


def test_testbed_judge_stores_the_faults_its_labels_imply_under_its_identity(judged_run, tmp_path):
    from typer.testing import CliRunner

    from testbed.cli import app
    from testbed.store.labels import identities
    from testbed.store.user_faults import checked_episodes

    path, run_id, _ = judged_run
    copy = tmp_path / "store.sqlite"
    copy.write_bytes(path.read_bytes())
    done = CliRunner().invoke(app, ["judge", run_id, "--judge", "local", "--store", str(copy), "-q"])
    assert done.exit_code == 0, done.output
    store = Store(copy, readonly=True)
    (local,) = [who for who in identities(store, run_id) if who != WHO]
    assert len(checked_episodes(store, run_id, local)) == 2, "the judge's faults are stored for both episodes"
    assert set(faults_df(store, run_id, local).detector) <= {str(RULES), str(local)}
