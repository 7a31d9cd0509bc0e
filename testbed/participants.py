"""Participants: an assistant agent and a simulated user, each `respond(transcript) -> Message`."""

from __future__ import annotations

from dataclasses import dataclass

from testbed.backends.base import Backend, BackendError, GenerateRequest
from testbed.specs.loader import ResolvedAgent
from testbed.templates import fill_slots
from testbed.transcript import Message, Transcript

CONVERSATION_SLOT = "{conversation}"


@dataclass
class Assistant:
    """Answers with the true-role view of the transcript, under its agent's sampling."""

    agent: ResolvedAgent
    backend: Backend

    async def respond(self, transcript: Transcript) -> Message:
        """Generate the assistant's next message."""
        s = self.agent.spec.sampling
        request = GenerateRequest(transcript.chat(), temperature=s.temperature, max_tokens=s.max_tokens, top_p=s.top_p, seed=s.seed)
        completion = await self.backend.generate(request)
        return Message("assistant", completion.text, self.agent.spec.name, transcript.next_turn, request.sampling(),
                       completion.usage, completion.finish_reason)


def render_conversation(transcript: Transcript) -> str:
    """The conversation as plain text with speaker labels, for a model that is told it is the user."""
    labels = {"user": "User", "assistant": "Assistant"}
    return "\n\n".join(f"{labels[m.role]}: {m.content}" for m in transcript.dialogue())


@dataclass
class SimulatedUser:
    """Writes the user's next turn, in one of two modes.

    `raw`: the chat template's user turn is opened after the conversation and the model continues
    it (vLLM `continue_final_message`); the purest form of the probe, no instructions at all.
    `instructed`: the role-play prompt is sent as one user message with the conversation rendered
    as text in place of `{conversation}`. The conversation is shown as text rather than as a
    role-flipped message list so that every chat template accepts it (many refuse a history that
    starts with an assistant turn); the transcript itself keeps its true roles.
    """

    agent: ResolvedAgent
    backend: Backend
    mode: str
    prompt: str | None = None

    def __post_init__(self) -> None:
        if self.mode == "raw" and not self.backend.capabilities.continue_user_turn:
            raise BackendError(
                f"agent {self.agent.spec.name} ({self.agent.path}) cannot continue the user turn, which user mode `raw` needs: "
                "use a vLLM backend, or user_modes: [instructed]"
            )
        if self.mode == "instructed" and (not self.prompt or CONVERSATION_SLOT not in self.prompt):
            raise BackendError(f"the instructed user prompt must contain {CONVERSATION_SLOT} where the conversation goes")

    def view(self, transcript: Transcript) -> tuple[list[dict[str, str]], bool]:
        """The messages this user sends to its model, and whether the last one is continued."""
        if self.mode == "raw":
            return transcript.chat() + [{"role": "user", "content": ""}], True
        assert self.prompt is not None
        return [{"role": "user", "content": fill_slots(self.prompt, {"conversation": render_conversation(transcript)})}], False

    async def respond(self, transcript: Transcript, *, temperature: float, max_tokens: int, seed: int | None = None) -> Message:
        """Generate the user's next turn; the text is stored exactly as generated."""
        messages, continue_final = self.view(transcript)
        top_p = self.agent.spec.sampling.top_p
        request = GenerateRequest(messages, temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=seed,
                                  continue_final_message=continue_final)
        completion = await self.backend.generate(request)
        sampling = {**request.sampling(), "mode": self.mode}
        return Message("user", completion.text, self.agent.spec.name, transcript.next_turn, sampling,
                       completion.usage, completion.finish_reason)


FLIPPED = {"user": "assistant", "assistant": "user"}


def flipped_view(transcript: Transcript) -> list[dict[str, str]]:
    """The dialogue with roles swapped: the simulated user's model speaks as `assistant`."""
    return [{"role": FLIPPED[m.role], "content": m.content} for m in transcript.dialogue()]


@dataclass
class DialogueUser(SimulatedUser):
    """A simulated user over many turns.

    `raw` continues the chat template's user turn as in the probe. `instructed` sends the persona
    prompt (`prompt`, already filled in) as the system message followed by the role-flipped
    dialogue, so the model writes the user's next turn as its own reply (τ²-bench's view).
    """

    def __post_init__(self) -> None:
        if self.mode == "raw" and not self.backend.capabilities.continue_user_turn:
            raise BackendError(
                f"agent {self.agent.spec.name} ({self.agent.path}) cannot continue the user turn, which user mode `raw` needs"
            )
        if self.mode == "instructed" and not self.prompt:
            raise BackendError("an instructed dialogue user needs a persona prompt")

    def view(self, transcript: Transcript) -> tuple[list[dict[str, str]], bool]:
        """Raw: true roles plus an open user turn. Instructed: persona prompt plus the flipped dialogue."""
        if self.mode == "raw":
            return transcript.chat() + [{"role": "user", "content": ""}], True
        assert self.prompt is not None
        return [{"role": "system", "content": self.prompt}, *flipped_view(transcript)], False
