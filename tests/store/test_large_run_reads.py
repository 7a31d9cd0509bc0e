"""Reads that walk a large run in bounded memory give exactly what the whole-run reads give."""

from __future__ import annotations

import pandas as pd

from testbed.analysis.frames import episodes_frame
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.frames import episode_ends_df, messages_df
from testbed.transcript import Message, Usage, generated_user_turns

RUN = "probe-big-00000000"


def key(eid: str) -> EpisodeKey:
    return EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", "m-a", "u", "m-u", "raw", 0.0, 0, "none")


def outcome(eid: str, roles: str, status: str = "done") -> EpisodeOutcome:
    """An episode whose messages have the roles spelled by `roles` (s, u, a), each text naming its place."""
    names = {"s": "system", "u": "user", "a": "assistant"}
    messages = [Message(names[r], f"{eid} {names[r]} {i}", "x", i, usage=Usage(0, 10 + i, 0.0)) for i, r in enumerate(roles)]
    return EpisodeOutcome(key(eid), messages, status, "error" if status == "error" else "max_turns")


def filled(store: Store) -> Store:
    """Episodes of every shape: a probe, a dialogue, one without an answer, one ending on the answer, errored ones."""
    store.begin_run(RUN, scenario="probe-big", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=9)
    shapes = {"e01": "sua", "e02": "suau", "e03": "uauau", "e04": "u", "e05": "suauuau", "e06": "ua", "e07": "uuau",
              "e08": "suau", "e09": "sauu"}
    for eid, roles in shapes.items():
        store.write_episode(RUN, outcome(eid, roles, "error" if eid in ("e05", "e08") else "done"))
    return store


def test_iter_turns_in_small_batches_gives_every_turn_of_turns_in_order(store):
    filled(store)
    for errored in (False, True):
        whole = store.turns(RUN, include_errored=errored)
        for batch in (1, 2, 4, 100):
            assert list(store.iter_turns(RUN, include_errored=errored, batch=batch)) == whole
    assert {t.episode_id for t in store.turns(RUN)} == {"e02", "e03", "e07", "e09"}
    assert {t.episode_id for t in store.turns(RUN, include_errored=True)} == {"e02", "e03", "e05", "e07", "e08", "e09"}
    assert [t.turn_index for t in store.turns(RUN) if t.episode_id == "e03"] == [2, 4]


def test_turn_keys_are_the_turns_without_their_text(store):
    filled(store)
    keys = [tuple(k) for k in store.turn_keys(RUN)]
    assert keys == [(t.episode_id, t.turn_index) for t in store.turns(RUN)]
    assert list(store.turn_keys("no-such-run")) == []


def test_messages_df_marks_exactly_the_transcript_rule_s_generated_turns(store):
    filled(store)
    frame = messages_df(store, RUN)
    for eid, messages in frame.groupby("episode_id"):
        rule = {m.turn_index for m in generated_user_turns(messages.itertuples(index=False))}
        assert set(messages.turn_index[messages.generated_user_turn]) == rule, eid
    assert frame.generated_user_turn.dtype == bool


def test_episode_ends_give_the_request_and_the_final_user_turn_after_the_last_answer(store):
    filled(store)
    ends = episode_ends_df(store, RUN).set_index("episode_id")
    assert ends.loc["e01", "question"] == "e01 user 1" and pd.isna(ends.loc["e01", "user_turn"]), "ends on the answer"
    assert ends.loc["e02", "user_turn"] == "e02 user 3" and ends.loc["e02", "user_turn_tokens"] == 13
    assert ends.loc["e03", "user_turn_index"] == 4, "the last of several generated turns"
    assert ends.loc["e04", "question"] == "e04 user 0" and pd.isna(ends.loc["e04", "user_turn_index"]), "no answer, no user turn"
    assert ends.loc["e09", "user_turn"] == "e09 user 3"


def test_episodes_frame_keeps_every_episode_with_its_final_turn(store):
    filled(store)
    frame = episodes_frame(store, RUN).set_index("episode_id")
    assert len(frame) == 9 and list(frame.status.iloc[:7]) == ["done"] * 7
    assert frame.loc["e02", "user_turn"] == "e02 user 3" and frame.loc["e02", "user_turn_index"] == 3
    assert pd.isna(frame.loc["e06", "user_turn"]) and frame.loc["e06", "user_turn_words"] == 0
    assert frame.user_turn_index.dtype == "float64", "episodes without a final user turn leave a gap"
    assert episodes_frame(store, "no-such-run").empty


def test_iter_messages_gives_each_episode_s_transcript_as_messages_does(store):
    filled(store)
    for errored in (False, True):
        wanted = [e.episode_id for e in store.episodes(RUN) if errored or e.status == "done"]
        expected = [(eid, store.messages(RUN, eid)) for eid in sorted(wanted)]
        for batch in (1, 3, 100):
            assert list(store.iter_messages(RUN, include_errored=errored, batch=batch)) == expected
    assert "e05" not in dict(store.iter_messages(RUN)), "errored episodes only when asked"
