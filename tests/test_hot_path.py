"""What the lean hot path keeps incrementally is what a full rebuild would give; per-run settings are per run."""

from __future__ import annotations

import gc

import pytest

from helpers import REPO, write_yaml
from testbed.backends.scripted import ScriptedBackend
from testbed.control_tokens import ControlTokens
from testbed.loop.participants import Assistant, DialogueUser, TurnSampling, flipped_view, shown
from testbed.running.runner import RUN_GC_THRESHOLD, run_scenario
from testbed.specs.agent import AgentSpec
from testbed.specs.loader import ResolvedAgent, load_scenario
from testbed.transcript import Message, Transcript, Usage

AGENT = ResolvedAgent(AgentSpec(name="a", backend="scripted", model="m", outputs=[]), None, None)  # type: ignore[arg-type]
TOKENS = ControlTokens(("<|turn|>",))


def opening() -> Transcript:
    t = Transcript()
    t.append(Message("system", "Be brief. <|turn|>", "a", 0))
    t.append(Message("user", "What is 2 + 2? <|turn|>", "dataset", 1))
    return t


def grow(t: Transcript, role: str, text: str, tokens: int = 3, reused: str | None = None) -> None:
    t.append(Message(role, text, "x", t.next_turn, usage=Usage(5, tokens, 0.1), reused_from=reused))


def test_views_grown_turn_by_turn_equal_views_rebuilt_from_the_transcript():
    assistant = Assistant(AGENT, ScriptedBackend())
    assistant.__dict__["tokens"] = TOKENS
    user = DialogueUser(AGENT, ScriptedBackend(), "instructed", "You are the user.", TurnSampling(0.7, 16))
    user.__dict__["tokens"] = TOKENS
    raw = DialogueUser(AGENT, ScriptedBackend(), "raw", None, TurnSampling(0.7, 16))
    raw.__dict__["tokens"] = TOKENS
    t = opening()
    first = assistant.view(t)
    for i in range(4):
        assert assistant.view(t) == shown(t.chat(), TOKENS)
        assert user.view(t) == ([{"role": "system", "content": "You are the user."}, *shown(flipped_view(t), TOKENS)], False)
        assert raw.view(t) == ([*shown(t.chat(), TOKENS), {"role": "user", "content": ""}], True)
        grow(t, "assistant" if i % 2 == 0 else "user", f"turn {i} <|turn|>")
    assert first == shown(opening().chat(), TOKENS), "a list handed to a request is not changed by later turns"
    assert "< |turn|>" in assistant.view(t)[-1]["content"] and "<|turn|>" in t.messages[-1].content


def test_a_view_of_another_transcript_starts_over():
    assistant = Assistant(AGENT, ScriptedBackend())
    assistant.__dict__["tokens"] = TOKENS
    long, short = opening(), opening()
    grow(long, "assistant", "four")
    grow(long, "user", "why?")
    assert len(assistant.view(long)) == 4
    assert assistant.view(short) == shown(short.chat(), TOKENS)
    assert assistant.view(long) == shown(long.chat(), TOKENS)


def test_derived_users_keep_their_view_only_while_the_mode_holds():
    user = DialogueUser(AGENT, ScriptedBackend(), "instructed", "Prompt one.", TurnSampling(0.7, 16))
    t = opening()
    user.view(t)
    reprompted = user.derive(prompt="Prompt two.")
    assert reprompted.__dict__["_chat"] is user.__dict__["_chat"]
    assert reprompted.view(t)[0][0] == {"role": "system", "content": "Prompt two."}
    raw = user.derive(mode="raw", prompt=None)
    assert "_chat" not in raw.__dict__ and raw.view(t)[1] is True


def test_the_transcripts_running_counts_equal_a_recount():
    t = opening()
    grow(t, "assistant", "four", tokens=7)
    grow(t, "user", "why?", tokens=2)
    assert (t.user_turns(), t.completion_tokens()) == (2, 9)
    grow(t, "assistant", "copied", tokens=50, reused="answer-1")
    grow(t, "user", "and?", tokens=4)
    assert (t.user_turns(), t.completion_tokens()) == (3, 13)
    assert t.completion_tokens() == t.usage().completion_tokens
    copy = Transcript(list(t.messages))
    assert (copy.user_turns(), copy.completion_tokens()) == (3, 13)


@pytest.fixture
def dialogue(tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "m", "outputs": ["x"], "concurrency": 4})
    return load_scenario(write_yaml(tmp_path / "dlg.yaml", {
        "kind": "dialogue", "name": "dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 3},
        "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["instructed"], "user_prompt_file": "prompts/user.md",
        "temperatures": [0.7], "samples_per_temperature": 2, "max_tokens": 16, "max_user_turns": 3}))


async def test_control_tokens_are_looked_up_once_per_agent_per_run(dialogue, store, monkeypatch):
    looked_up = []
    real = ControlTokens.for_agent.__func__

    def for_agent(cls, spec):
        looked_up.append(spec.name)
        return real(cls, spec)

    monkeypatch.setattr(ControlTokens, "for_agent", classmethod(for_agent))
    backend = ScriptedBackend(lambda r: "Why?")
    summary = await run_scenario(dialogue, store, backends={"assistant": backend, "user": backend}, show_progress=False)
    assert summary.done == 6
    assert len(looked_up) == 2, "once for the assistant's agent and once for the user's, not once per episode"


async def test_a_run_tunes_the_collector_and_puts_it_back(dialogue, store):
    before = gc.get_threshold()
    seen = []

    def reply(request) -> str:
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return "Why?"

    backend = ScriptedBackend(reply)
    await run_scenario(dialogue, store, backends={"assistant": backend, "user": backend}, show_progress=False)
    assert seen and all(threshold == RUN_GC_THRESHOLD and frozen > 0 for threshold, frozen in seen)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
