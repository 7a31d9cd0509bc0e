"""An assistant reply with neither text nor a tool call is asked again up to the agent's max_retries and then errors
the episode, as τ²'s loop does (its `generate` retries an empty reply, then its AssistantMessage refuses it): the
native loop and τ²'s orchestrator must not part on an assistant that falls silent."""

from __future__ import annotations

from testbed.backends.base import Completion
from testbed.backends.scripted import ScriptedBackend
from testbed.running.runner import run_scenario
from testbed.transcript import Usage


def text(words: str) -> Completion:
    return Completion(words, "stop", Usage(5, 1))


def counting(replies):
    asked = []

    def respond(request):
        asked.append(request)
        return text(replies[min(len(asked), len(replies)) - 1])

    return ScriptedBackend(respond), asked


async def test_a_silent_assistant_errors_the_episode_after_its_retries(tau2_spec, store, tmp_path):
    from helpers import write_yaml

    write_yaml(tmp_path / "silent.yaml", {"name": "silent", "backend": "scripted", "model": "m", "outputs": ["x"], "max_retries": 2})
    assistant, asked = counting(["", " \n"])
    user = ScriptedBackend(lambda r: text("I need a task created."))
    summary = await run_scenario(tau2_spec(assistant="silent.yaml"), store, backends={"assistant": assistant, "user": user},
                                 show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "error" and len(asked) == 3
    assert "neither text nor a tool call 3 times" in episode.error_reason and "silent" in episode.error_reason
    assert not [m for m in store.messages(summary.run_id, episode.key.episode_id) if m.role == "assistant" and m.sampling and not m.content]


async def test_an_empty_reply_asked_again_may_still_be_answered(tau2_spec, store):
    assistant, asked = counting(["", "Done. ###STOP###"])
    user = ScriptedBackend(lambda r: text("I need a task created."))
    summary = await run_scenario(tau2_spec(), store, backends={"assistant": assistant, "user": user}, show_progress=False)
    (episode,) = store.episodes(summary.run_id)
    assert episode.status == "done" and episode.termination == "agent_stop"
    spoken = [m.content for m in store.messages(summary.run_id, episode.key.episode_id) if m.role == "assistant" and m.sampling]
    assert spoken == ["Done."] and len(asked) == 2
