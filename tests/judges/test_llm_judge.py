"""The LLM judge's plumbing with a scripted model: structured output, retries, unscored replies."""

from __future__ import annotations

from testbed.backends.base import Capabilities
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.llm_judge import LLMJudge
from testbed.judges.specs import load_judge
from testbed.judges.verdict import JudgeInput

ITEM = JudgeInput("t", "What is 2 + 2?", "2 + 2 = 4.", "Why is it 4 and not 5?")


async def test_structured_output_requested_and_parsed():
    backend = ScriptedBackend(['{"label": "genuine_followup", "reason": "asks why"}'])
    verdict, attempts = await LLMJudge(load_judge("failure-modes"), backend).judge_turn(ITEM)
    assert (verdict.label, verdict.followup, attempts) == ("genuine_followup", True, 1)
    fmt = backend.requests[0].response_format
    assert fmt["type"] == "json_schema" and "genuine_followup" in str(fmt["json_schema"]["schema"])


async def test_retry_shows_the_bad_reply_and_the_problem():
    backend = ScriptedBackend(["sure! genuine_followup", '{"followup": false, "reason": "restates"}'])
    verdict, attempts = await LLMJudge(load_judge("followup"), backend).judge_turn(ITEM)
    assert (verdict.followup, attempts) == (False, 2)
    retry = backend.requests[1].messages
    assert [m["role"] for m in retry] == ["user", "assistant", "user"]
    assert retry[1]["content"] == "sure! genuine_followup" and "not a valid verdict" in retry[2]["content"]


async def test_unparsable_after_retries_is_unscored_with_raw_replies():
    judge = load_judge("failure-modes")
    backend = ScriptedBackend(["nope", "still nope", "{broken"])
    verdict, attempts = await LLMJudge(judge, backend).judge_turn(ITEM)
    assert attempts == judge.spec.max_retries + 1 == 3
    assert not verdict.scored and verdict.label is None and verdict.followup is None
    assert verdict.raw == "nope\n---\nstill nope\n---\n{broken"


async def test_plain_backends_get_no_response_format():
    backend = ScriptedBackend(['{"followup": true, "reason": "x"}'], capabilities=Capabilities())
    await LLMJudge(load_judge("followup"), backend).judge_turn(ITEM)
    assert backend.requests[0].response_format is None


async def test_a_failed_call_is_unscored_with_its_reason_and_others_still_arrive():
    from testbed.backends.base import BackendError
    from testbed.judges.llm_judge import judge_all

    def respond(request):
        if "second" in request.messages[0]["content"]:
            raise BackendError("HTTP 503 from judge server")
        return '{"label": "short_filler", "reason": "thanks"}'

    items = [JudgeInput(str(i), "q", "a", text) for i, text in enumerate(["first", "second", "third"])]
    arrived = []
    results = await judge_all(load_judge("failure-modes"), items, backend=ScriptedBackend(respond),
                              on_verdict=lambda i, v, n: arrived.append(i))
    assert [v.label for v, _ in results] == ["short_filler", None, "short_filler"]
    assert results[1][0].reason == "judge call failed: HTTP 503 from judge server" and results[1][1] == 0
    assert sorted(arrived) == [0, 1, 2]
