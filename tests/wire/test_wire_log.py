"""The wire recorder: exact requests through a real proxy, attributed to turns, kept with the episode."""

from __future__ import annotations

import sys

import aiohttp
import pytest

from helpers import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

from mock_openai import MockOpenAI  # noqa: E402

from testbed.store import EpisodeKey, EpisodeOutcome, Store, WireRecord  # noqa: E402
from testbed.transcript import Message, Transcript  # noqa: E402
from testbed.wire import WireRecorder  # noqa: E402
from testbed.wire.attribution import attribute  # noqa: E402


def record(seq: int, role: str, status: int = 200) -> WireRecord:
    response = {"choices": [{"message": {"content": "x"}}]} if status == 200 else {}
    return WireRecord(seq, role, "chat/completions", {"messages": []}, status, response, None, None, 0.01, 0.0)


def transcript(*roles: str) -> Transcript:
    t = Transcript()
    t.append(Message("user", "opening", "dataset", 0))
    for role in roles:
        t.append(Message(role, role, role, t.next_turn, {"temperature": 0.0}))
    return t


def test_each_successful_request_is_the_turn_it_produced_and_a_retry_counts_for_its_turn():
    records = [record(10, "assistant", 500), record(11, "assistant"), record(12, "user"), record(13, "assistant")]
    out = attribute(records, transcript("assistant", "user", "assistant"))
    assert [(w.seq, w.role, w.status, w.turn_index) for w in out] == [
        (0, "assistant", 500, 1), (1, "assistant", 200, 1), (2, "user", 200, 2), (3, "assistant", 200, 3)]


def test_a_request_whose_turn_was_not_stored_counts_for_the_next_turn():
    out = attribute([record(0, "assistant"), record(1, "user"), record(2, "assistant", 503)], transcript("assistant"))
    assert [w.turn_index for w in out] == [1, 2, 2]


async def test_the_proxy_forwards_exactly_and_records_chat_completions_only():
    async with MockOpenAI(reply_words=3) as mock, WireRecorder() as recorder:
        tap = recorder.open_tap()
        base = tap.route("user", mock.base_url)
        body = {"model": "mock", "messages": [{"role": "user", "content": "hi", "name": "x"}], "seed": 3}
        async with aiohttp.ClientSession(headers=tap.headers) as http:
            async with http.get(f"{base}/models") as models:
                assert models.status == 200 and (await models.json())["data"][0]["id"] == "mock"
            async with http.post(f"{base}/chat/completions", json=body) as resp:
                reply = await resp.json()
        records = tap.take()
        assert mock.requests == [body]
        assert len(records) == 1 and records[0].request == body and records[0].response == reply
        assert records[0].reply == reply["choices"][0]["message"]["content"] and records[0].completion_tokens == 3
        assert records[0].sampling == {"seed": 3}
        async with aiohttp.ClientSession(headers=tap.headers) as http:
            async with http.post(f"{base}/chat/completions", json=body) as late:
                assert late.status == 404, "a closed tap refuses requests instead of recording them nowhere"


async def test_an_unreachable_server_is_a_recorded_502_naming_the_url():
    async with WireRecorder() as recorder:
        tap = recorder.open_tap()
        base = tap.route("assistant", "http://127.0.0.1:9/v1")
        async with aiohttp.ClientSession(headers=tap.headers) as http:
            async with http.post(f"{base}/chat/completions", json={"messages": []}) as resp:
                assert resp.status == 502
                assert "127.0.0.1:9/v1/chat/completions" in (await resp.json())["error"]["message"]
        assert [r.status for r in tap.take()] == [502]


def key(eid: str = "e1") -> EpisodeKey:
    return EpisodeKey(eid, "item", "gsm8k", "a", "am", "u", "um", "instructed", 0.7, 0, "none")


def test_the_wire_log_is_stored_with_its_episode_and_replaced_with_a_retried_one(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.begin_run("r", scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1,
                    framework="autogen")
    t = transcript("assistant")
    wire = attribute([record(0, "assistant", 500)], t)
    store.write_episode("r", EpisodeOutcome(key(), t.messages, "error", "error", "boom", wire=wire))
    assert [w.status for w in store.wire("r", "e1")] == [500]
    store.write_episode("r", EpisodeOutcome(key(), t.messages, "done", "max_turns", wire=attribute([record(0, "assistant")], t)))
    stored = store.wire("r", "e1", turn=1)
    assert [(w.status, w.turn_index, w.request) for w in stored] == [(200, 1, {"messages": []})]
    assert store.framework_of("r") == "autogen" and store.run("r").framework == "autogen"


def test_a_run_cannot_be_resumed_under_another_framework(tmp_path):
    from testbed.store import StoreError

    store = Store(tmp_path / "s.sqlite")
    args = dict(scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    store.begin_run("r", **args)
    with pytest.raises(StoreError, match="run r was run with framework native, not camel"):
        store.begin_run("r", framework="camel", **args)
    store.add_run_cost("r", 2.0, 0.5)
    store.add_run_cost("r", 1.0, 0.25)
    assert store.run_cost("r") == (3.0, 0.75)
