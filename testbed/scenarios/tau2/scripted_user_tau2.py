"""The scripted τ² user (testbed.scenarios.tau2.scripted_user) as τ²'s own user, for τ²'s `Orchestrator`.

So that the `tau2` framework and the native loop face the same user when a scenario seats the scripted one, and a
paired comparison of the two loops measures the loops alone. It is τ²'s UserSimulator with the model call replaced
by the script: the same state, the same stop check (τ²'s `is_stop` on `###STOP###` / `###TRANSFER###`), no seed.
"""

from __future__ import annotations

from typing import Any

from testbed.scenarios.tau2.domains import tau2_registry
from testbed.scenarios.tau2.scripted_user import UserScript

tau2_registry()

from tau2.data_model.message import AssistantMessage, MultiToolMessage, UserMessage  # noqa: E402
from tau2.user.user_simulator import UserSimulator  # noqa: E402


class ScriptedTau2User(UserSimulator):
    """τ²'s user simulator answering from a UserScript, one per episode (`said`: its own turns so far, the user turns of
    the task's history not being its own); `prompt` is kept as its system prompt (unused by the script)."""

    def __init__(self, script: UserScript, prompt: str):
        super().__init__(tools=None, instructions=None, llm=None, llm_args=None)
        self.script, self.prompt = script, prompt
        self.said: list[str] = []

    @property
    def system_prompt(self) -> str:
        """The episode's user prompt, as a model user would have had it."""
        return self.prompt

    def set_seed(self, seed: int) -> None:
        """Nothing: the script draws nothing."""

    def _generate_next_message(self, message: Any, state: Any) -> tuple[UserMessage, Any]:
        """The script's answer to the agent's last words, appended to the user's state as τ²'s user does."""
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        heard = next((m.content for m in reversed(state.messages)
                      if isinstance(m, AssistantMessage) and not m.is_tool_call() and m.content), "")
        reply = UserMessage(role="user", content=self.script.reply(heard or "", self.said))
        self.said.append(reply.content)
        state.messages.append(reply)
        return reply, state
