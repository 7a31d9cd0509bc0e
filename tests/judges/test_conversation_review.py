"""The whole-conversation review of a simulated user's turns, with a scripted reviewer (no model): the prompt shows the
instructions, the guidelines and every user turn numbered; a valid reply tags the listed turns and leaves the others
clean; an unknown tag, a turn that is not the user's, prose or a garbled reply is asked again and, still invalid,
unscored (never clean), with the replies kept."""

from __future__ import annotations

import json
import re

import pytest

from helpers import write_yaml
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.conversation_review import (PROMPT_SLOTS, PROMPT_VERSION, REVIEWER, ErrorVocabulary,
                                                UnparsableUserReview, parse_user_review, prompt_path,
                                                review_conversation, user_turns)
from testbed.judges.fault_review import load_reviewer
from testbed.transcript import Message, ToolCall

VOCAB = ErrorVocabulary({"hallucination": "states a fact it was not given", "premature_termination": "stops early",
                         "other": "anything else"},
                        {"critical_hindered": "made the task harder", "critical_helped": "made it easier", "minor": "no change"})
INSTRUCTIONS = "You want task_9 created; your user id is u_42."
GUIDELINES = "Share what you know only when asked."


def conversation() -> list[Message]:
    return [Message("system", "agent policy", "a", 0), Message("assistant", "Hi, how can I help?", "a", 1),
            Message("user", "Create task_9 for me, ticket ZX9.", "u", 2),
            Message("assistant", "", "a", 3, tool_calls=(ToolCall("c1", "create_task", '{"id": "task_9"}'),)),
            Message("assistant", "Done.", "a", 4), Message("user", "Thanks ###STOP###", "u", 5)]


def reply(*errors, summary: str = "one made-up ticket") -> str:
    return json.dumps({"errors": [dict(zip(("turn", "tags", "severity", "reason"), e)) for e in errors], "summary": summary})


VALID = reply((2, ["hallucination"], "minor", "the ticket is not in its instructions"))


@pytest.fixture
def reviewer(tmp_path):
    return load_reviewer(write_yaml(tmp_path / "rev.yaml", {"name": "rev", "backend": "scripted", "model": "rev-model",
                                                             "outputs": ["x"]}))


def test_the_prompt_has_its_slots_and_a_version():
    text = prompt_path().read_text()
    assert all("{" + s + "}" in text for s in PROMPT_SLOTS)
    assert (REVIEWER, PROMPT_VERSION) == ("user-review", "user-review-1")


def test_a_valid_reply_names_user_turns_with_tags_and_severity():
    errors, summary = parse_user_review(f"```json\n{VALID}\n```", [2, 5], VOCAB)
    assert [(e.turn, e.tags, e.severity) for e in errors] == [(2, ("hallucination",), "minor")]
    assert summary == "one made-up ticket"
    assert parse_user_review('{"errors": [], "summary": "clean"}', [2, 5], VOCAB) == ([], "clean")


@pytest.mark.parametrize("bad, problem", [
    (reply((2, ["rudeness"], "minor", "r")), "'rudeness' .* is not a tag"),
    (reply((2, ["hallucination"], "fatal", "r")), "severity"),
    (reply((3, ["hallucination"], "minor", "r")), "turn 3 is not a USER turn"),
    (reply((2, [], "minor", "r")), "non-empty list"),
    (reply(("2", ["other"], "minor", "r")), "must be the number"),
    (reply((2, ["other"], "minor", "r"), (2, ["hallucination"], "minor", "r")), "listed twice"),
    ('{"summary": "fine"}', "`errors` must be a list"),
    ("Turn 2 is a hallucination, minor.", "not a JSON object"),
    ('{"errors": [{"turn": 2, "tags": ["hallu', "not a JSON object"),
])
def test_an_invalid_reply_says_what_is_wrong(bad, problem):
    with pytest.raises(UnparsableUserReview, match=problem):
        parse_user_review(bad, [2, 5], VOCAB)


async def test_a_review_tags_the_listed_turns_and_leaves_the_others_clean(reviewer):
    backend = ScriptedBackend([VALID])
    review = await review_conversation(conversation(), INSTRUCTIONS, GUIDELINES, reviewer, VOCAB, backend=backend, episode_id="e1")
    assert review.scored and review.summary == "one made-up ticket"
    assert [(t.turn_index, t.tags, t.severity, t.scored) for t in review.turns] == [
        (2, ("hallucination",), "minor", True), (5, (), None, True)]
    prompt = backend.requests[0].messages[0]["content"]
    assert INSTRUCTIONS in prompt and GUIDELINES in prompt and "[2] USER: Create task_9" in prompt
    assert "[3] AGENT calls create_task" in prompt and "are: 2, 5." in prompt and "agent policy" not in prompt
    assert all(f"- {t}: {m}" in prompt for t, m in VOCAB.tags.items())
    schema = backend.requests[0].response_format["json_schema"]["schema"]
    assert schema["properties"]["errors"]["items"]["properties"]["turn"]["enum"] == [2, 5]


async def test_the_reviewer_is_told_how_the_conversation_ended_since_stop_signals_are_not_stored(reviewer):
    backend = ScriptedBackend([VALID, VALID])
    await review_conversation(conversation(), INSTRUCTIONS, GUIDELINES, reviewer, VOCAB, backend=backend, termination="user_stop")
    await review_conversation(conversation(), INSTRUCTIONS, GUIDELINES, reviewer, VOCAB, backend=backend)
    stopped, unknown = (r.messages[0]["content"] for r in backend.requests)
    assert "ended: the USER ended the conversation" in stopped and "ended: not recorded." in unknown


def test_the_prompt_names_no_benchmark():
    assert not re.search(r"τ|tau|airline|retail|telecom|sierra", prompt_path().read_text(), re.I)


async def test_a_reply_repaired_on_retry_is_scored(reviewer):
    backend = ScriptedBackend([reply((3, ["other"], "minor", "r")), VALID])
    review = await review_conversation(conversation(), INSTRUCTIONS, GUIDELINES, reviewer, VOCAB, backend=backend)
    assert review.scored and review.turns[0].attempts == 2
    assert "turn 3 is not a USER turn" in backend.requests[1].messages[-1]["content"]


async def test_a_reply_still_invalid_after_the_retries_is_unscored_never_clean(reviewer):
    garbled = ["no errors here, all good", '{"errors": [{"turn": 2', reply((2, ["rudeness"], "minor", "r"))]
    review = await review_conversation(conversation(), INSTRUCTIONS, GUIDELINES, reviewer, VOCAB,
                                       backend=ScriptedBackend(garbled), episode_id="e1")
    assert not review.scored and [t.turn_index for t in review.turns] == [2, 5]
    assert all(not t.scored and t.tags == () and t.severity is None and t.attempts == 3 for t in review.turns)
    assert all(g in review.turns[0].raw for g in garbled)


def test_user_turns_include_the_users_tool_calls():
    messages = [*conversation(), Message("user", "", "u", 6, tool_calls=(ToolCall("c2", "toggle_airplane_mode", "{}"),))]
    assert user_turns(messages) == [2, 5, 6]
