"""One definition of an episode's request (its first user message that calls no tool): the transcript function, the
reader's turn context and the store's SQL aggregate read the same message."""

from __future__ import annotations

import pytest

from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.frames import episode_ends_df
from testbed.transcript import Message, ToolCall, request_message, request_text

RUN = "dialogue-request-00000000"
CALL = (ToolCall("c1", "check_phone", "{}"),)


def message(role: str, text: str, index: int, calls: tuple = ()) -> Message:
    return Message(role, text, "x", index, tool_calls=calls)


EPISODES = {
    "plain": [message("system", "be brief", 0), message("user", "what is 2+2?", 1), message("assistant", "4", 2),
              message("user", "thanks", 3)],
    "tool-first": [message("assistant", "how can I help?", 0), message("user", "", 1, CALL),
                   message("user", "my phone is broken", 2), message("assistant", "let me see", 3), message("user", "ok", 4)],
    "no-request": [message("system", "be brief", 0), message("assistant", "hello", 1)],
}
"""A dataset question, a user whose first message calls a tool before it speaks, and an episode with no user message."""
REQUESTS = {"plain": "what is 2+2?", "tool-first": "my phone is broken", "no-request": ""}


@pytest.fixture
def filled(store: Store) -> Store:
    store.begin_run(RUN, scenario="dialogue-request", kind="dialogue", spec={}, fingerprint="f", versions={},
                    git_revision=None, planned=len(EPISODES))
    for eid, messages in EPISODES.items():
        key = EpisodeKey(eid, f"item-{eid}", "gsm8k", "a", "m-a", "u", "m-u", "instructed", 0.0, 0, "none")
        store.write_episode(RUN, EpisodeOutcome(key, messages, "done", "max_turns"))
    return store


def test_the_request_is_the_first_user_message_that_speaks():
    assert {eid: request_text(messages) for eid, messages in EPISODES.items()} == REQUESTS
    assert request_message(EPISODES["tool-first"]) is EPISODES["tool-first"][2]
    assert request_message([{"role": "user", "content": "as a row", "tool_calls_json": None}])["content"] == "as a row"


def test_every_reader_of_a_run_takes_the_same_request(filled):
    assert {eid: request_text(filled.messages(RUN, eid)) for eid in EPISODES} == REQUESTS
    ends = episode_ends_df(filled, RUN, exact=True).set_index("episode_id").question.fillna("").to_dict()
    assert ends == REQUESTS, "the SQL aggregate reports read"
    contexts = {t.episode_id: t.question for t in filled.turns(RUN)}
    assert contexts == {eid: REQUESTS[eid] for eid in ("plain", "tool-first")}, "the context judges read"
