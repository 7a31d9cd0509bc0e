"""Simulated-user faults over a stored τ² run made with scripted models: the per-episode frame, the faults turn by
turn, and the τ² report's fault rates, worked out by hand from the two episodes the scripts play."""

from __future__ import annotations

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from tau2_faulty_run import DONE, INVENTED, STOPPED, faulty_run  # noqa: E402
from testbed.analysis.stats import wilson_interval  # noqa: E402
from testbed.analysis.tau2.faults import EPISODE_COLUMNS, fault_frame, turn_faults  # noqa: E402
from testbed.analysis.tau2.report import tau2_report  # noqa: E402
from testbed.store import EpisodeKey, EpisodeOutcome  # noqa: E402
from testbed.store.labels import JudgeIdentity, write_labels  # noqa: E402
from testbed.store.records import LabelRow  # noqa: E402
from testbed.transcript import Message  # noqa: E402
from testbed.store.run_frames import RunFrames

WHO = JudgeIdentity("local", "v1")


@pytest.fixture
async def run(tmp_path, store):
    run_id, _ = await faulty_run(tmp_path, store)
    return store, run_id


def user_turns(store, run_id, task_id) -> list[int]:
    episode = next(e for e in store.episodes(run_id) if e.key.item_id == task_id)
    return [m.turn_index for m in store.messages(run_id, episode.key.episode_id) if m.role == "user" and m.spoken]


async def test_the_frame_has_one_row_per_episode_with_each_fault_kind(run):
    store, run_id = run
    frame = fault_frame(store, run_id)
    assert list(frame.columns[:len(EPISODE_COLUMNS)]) == EPISODE_COLUMNS and len(frame) == 2
    frame = frame.set_index("task_id")
    stopped, done = frame.loc[STOPPED], frame.loc[DONE]
    assert (stopped.termination, stopped.reward, bool(stopped.failed)) == ("user_stop", 0.0, True)
    assert (done.termination, done.reward, bool(done.failed)) == ("user_stop", 1.0, False)
    assert stopped.premature_stop and stopped.invented_fact and stopped.any_fault
    assert not (stopped.revealed_early or stopped.ungrounded_device_claim or stopped.role_drift), "no drift without a judge"
    assert not done.any_fault and done.checked and stopped.checked
    assert (stopped.user_model, stopped.user_temperature, stopped.framework) == ("m", 0.0, "native")


async def test_turn_faults_name_the_user_turn_and_its_evidence_and_a_judge_adds_drift(run):
    store, run_id = run
    first, last = user_turns(store, run_id, STOPPED)
    eid = fault_frame(store, run_id).set_index("task_id").loc[STOPPED, "episode_id"]
    write_labels(store, run_id, WHO, [LabelRow(eid, first, "scored", "genuine_followup", True),
                                      LabelRow(eid, last, "scored", "echo_assistant", False)])
    rows = turn_faults(store, run_id, WHO)
    assert list(rows.itertuples(index=False, name=None)) == [
        (eid, first, "invented_fact", INVENTED), (eid, last, "premature_stop", "undone: create_task"),
        (eid, last, "role_drift", "echo_assistant")]
    assert fault_frame(store, run_id, WHO).set_index("task_id").loc[STOPPED, "role_drift"]


async def test_the_tau2_report_gives_each_kinds_rate_and_the_failed_share_with_a_fault(run):
    store, run_id = run
    (row,) = tau2_report(RunFrames(store, run_id, None)).to_dict("records")
    assert (row["fault_episodes"], row["failed_episodes"]) == (2, 1)
    assert row["fault_premature_stop"] == row["fault_invented_fact"] == row["fault_any"] == 0.5
    assert (row["fault_premature_stop_lo"], row["fault_premature_stop_hi"]) == pytest.approx(wilson_interval(1, 2))
    assert row["fault_revealed_early"] == 0.0
    assert row["fault_role_drift"] != row["fault_role_drift"], "drift is unknown without a judge"
    assert row["failed_with_fault"] == 1.0
    assert (row["failed_with_fault_lo"], row["failed_with_fault_hi"]) == pytest.approx(wilson_interval(1, 1))
    assert row["reward"] == 0.5 and row["episodes"] == 2, "the existing columns stay"
    write_labels(store, run_id, WHO, [])
    (judged,) = tau2_report(RunFrames(store, run_id, WHO)).to_dict("records")
    assert judged["fault_role_drift"] == 0.0


def test_an_unknown_task_is_unchecked_and_an_errored_episode_failed(store):
    store.begin_run("r", scenario="s", kind="tau2", spec={}, fingerprint="f", versions={}, git_revision=None, planned=2)
    opening = [Message("assistant", "Hi!", "tau2", 0), Message("user", "My code is QQ12WW.", "u", 1)]
    finished = ("user_stop", None, 0.0)
    errored = ("error", "user: HTTP 500", None)
    for eid, item, status, (end, reason, reward) in (("e0", "no_such_task", "done", finished), ("e1", STOPPED, "error", errored)):
        key = EpisodeKey(eid, item, "tau2-mock", "a", "m-a", "u", "m-u", "instructed", 1.0, 0, "none")
        store.write_episode("r", EpisodeOutcome(key, opening, status, end, reason, reward))
    store.commit()
    frame = fault_frame(store, "r").set_index("episode_id")
    assert not frame.loc["e0", "checked"] and not frame.loc["e0", "any_fault"] and frame.loc["e0", "failed"]
    assert frame.loc["e1", "checked"] and frame.loc["e1", "failed"] and frame.loc["e1", "invented_fact"]
    assert list(turn_faults(store, "r").itertuples(index=False, name=None)) == [("e1", 1, "invented_fact", "QQ12WW")]
    (row,) = tau2_report(RunFrames(store, "r", None)).to_dict("records")
    assert row["fault_episodes"] == 0 and row["fault_any"] != row["fault_any"], "errored and unchecked episodes are no evidence"
