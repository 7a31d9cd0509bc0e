"""The comparison's paired numbers and the request shapes, on a hand-built store."""

from __future__ import annotations

import math

from testbed.analysis.reports.compare_render import COLUMNS, columns_for, comparison_text
from testbed.analysis.reports.compare import compare_frameworks, paired_with_native
from testbed.store.run_frames import RunFrames
from testbed.analysis.wire_shape import request_shape
from testbed.store import EpisodeKey, EpisodeOutcome, Store, WireRecord
from testbed.transcript import Message


def key(eid: str) -> EpisodeKey:
    return EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", "am", "u", "um", "instructed", 0.7, 0, "none")


def conversation(*user_turns: str) -> list[Message]:
    out = [Message("user", "What is 2 + 3?", "dataset", 0)]
    for text in user_turns:
        out.append(Message("assistant", "It is 5.", "a", len(out), {"temperature": 0.0}))
        out.append(Message("user", text, "u", len(out), {"temperature": 0.7}))
    return out


def stored(tmp_path, runs: dict[str, dict[str, list[Message]]]) -> Store:
    store = Store(tmp_path / "s.sqlite")
    for run_id, episodes in runs.items():
        store.begin_run(run_id, scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None,
                        planned=len(episodes), framework=run_id)
        for eid, messages in episodes.items():
            store.write_episode(run_id, EpisodeOutcome(key(eid), messages, "done", "max_turns"))
    return store


def test_turns_are_paired_by_position_and_a_turn_only_one_side_has_differs(tmp_path):
    store = stored(tmp_path, {
        "native": {"e1": conversation("Thanks!", "Why 5?"), "e2": conversation("ok"), "e3": conversation("only native")},
        "autogen": {"e1": conversation("thanks", "Why five?"), "e2": conversation("ok", "and 6?")},
    })
    paired = paired_with_native(RunFrames(store, "native"), RunFrames(store, "autogen"))
    assert paired["paired_episodes"] == 2 and paired["paired_turns"] == 4
    assert paired["turns_differ"] == 0.5, "e1: 'Thanks!' ~ 'thanks' same, 'Why 5?' differs; e2: 'ok' same, 'and 6?' unpaired"
    assert math.isnan(paired["followup_change"])
    frame = compare_frameworks(store, {"native": "native", "autogen": "autogen"}, {})
    assert list(frame.framework) == ["native", "autogen"] and list(frame.episodes) == [3, 2]
    assert frame.loc[1, "turns_differ"] == 0.5 and math.isnan(frame.loc[0, "followup_rate"])


def test_dialogue_rows_have_no_tau2_columns(tmp_path):
    store = stored(tmp_path, {"native": {"e1": conversation("ok")}, "autogen": {"e1": conversation("ok")}})
    frame = compare_frameworks(store, {"native": "native", "autogen": "autogen"}, {})
    assert not {"reward", "pass_hat_1", "error_share", "tool_calls_per_episode", "reward_pairs"} & set(frame.columns)
    assert columns_for(frame) is COLUMNS
    assert comparison_text(frame, [], None, "markdown").splitlines()[0] == "| " + " | ".join(n for n, _ in COLUMNS) + " |"


def test_a_request_shape_names_the_role_of_the_users_own_turns_and_where_the_task_sat():
    transcript = conversation("Why 5?", "Thanks")
    sent = [{"role": "system", "content": "You are the user."}, {"role": "user", "name": "user", "content": "What is 2 + 3?"},
            {"role": "user", "name": "assistant", "content": "It is 5."}, {"role": "assistant", "content": "Why 5?"},
            {"role": "user", "name": "assistant", "content": "It is 5."}]
    record = WireRecord(3, "user", "chat/completions", {"model": "m", "messages": sent, "seed": 7, "stream": False}, 200, {},
                        10, 2, 0.1, 0.0, turn_index=4)
    shape = request_shape(record, transcript)
    assert shape["roles"] == "system, user[user], user[assistant], assistant, user[assistant]"
    assert shape["own_turns_as"] == "assistant, user[user]"
    assert shape["task_at"] == "message 1 as user[user]"
    assert shape["system_prompt"] == "You are the user." and shape["sampling"] == "seed=7, stream=False"
