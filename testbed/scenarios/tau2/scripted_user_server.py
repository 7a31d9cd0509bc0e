"""`backend: tau2-scripted`: the scripted τ² user's seat (testbed.scenarios.tau2.scripted_user), with no model.

The native loop asks the script directly. An agent framework (AutoGen, LangGraph, CAMEL) builds its own model
client for the user from an OpenAI-compatible endpoint, so the backend also serves the script there: a chat
completions endpoint on 127.0.0.1, started with the run and stopped with it, one route per episode
(`/episodes/<token>/v1`) so each request reaches its own task's script. The framework's client sends the user's
view as every framework builds it, role-flipped (the user's own turns as `assistant`, the agent's as `user`); the
reply is the script's answer to the agent's last words. τ²'s own orchestrator gets the script as its user
(testbed.scenarios.tau2.scripted_user_tau2) and sends nothing here. These requests do not pass the wire recorder:
there is no model to record.
"""

from __future__ import annotations

import itertools
import secrets
import weakref
from typing import Any

from aiohttp import web

from testbed.backends.base import BackendError, BackendUnavailable, Capabilities, Completion, GenerateRequest
from testbed.scenarios.tau2.scripted_user import BACKEND, UserScript
from testbed.specs.registries import BackendEntry
from testbed.transcript import SPOKEN_ROLES, USER

ONLY_TAU2 = (f"backend {BACKEND} is the scripted τ² user: it plays the user of a τ² scenario (kind: tau2) only; "
             "use a model agent elsewhere")


def _text(content: Any) -> str:
    """A chat message's text, whether a string or a list of content parts."""
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def agents_last_words(messages: list[dict[str, Any]]) -> str:
    """From a framework's role-flipped user view: the agent's last words (the last message with text, when it is the
    agent's, role `user`)."""
    said = [m for m in messages if isinstance(m, dict) and m.get("role") in SPOKEN_ROLES and _text(m.get("content"))]
    return _text(said[-1].get("content")) if said and said[-1].get("role") == USER else ""


class EpisodeUser:
    """One episode's scripted user behind the endpoint: its script, and what it has said (the user turns of a task's
    message history, which a framework sends too, are not its own)."""

    def __init__(self, script: UserScript):
        self.script, self.said = script, []

    def reply(self, messages: list[dict[str, Any]]) -> str:
        """The script's answer to the request's messages."""
        text = self.script.reply(agents_last_words(messages), self.said)
        self.said.append(text)
        return text


class EpisodeRoute:
    """One episode's way to the scripted user: the endpoint a framework's client is given (`base_url`), holding the
    episode's user alive while the episode lasts."""

    def __init__(self, backend: "ScriptedUserBackend", script: UserScript, token: str):
        self.name, self.model, self.capabilities = backend.name, backend.model, backend.capabilities
        self.api_key_env = None
        self.user = EpisodeUser(script)
        self.base_url = f"{backend.base_url}/episodes/{token}/v1"

    async def start(self) -> None:
        """Nothing: the endpoint is the run's."""

    async def generate(self, request: GenerateRequest) -> Completion:
        """Refused: the scripted user's turn comes from ScriptedGoalUser, never from a chat request in-process."""
        raise BackendError(ONLY_TAU2)

    async def close(self) -> None:
        """Nothing: the endpoint is the run's."""


class ScriptedUserBackend:
    """The run's scripted-user endpoint (see the module's docstring); `for_script` gives an episode its route."""

    def __init__(self, name: str, model: str):
        self.name, self.model = name, model
        self.capabilities = Capabilities()
        self.base_url = ""
        self._users: weakref.WeakValueDictionary[str, EpisodeUser] = weakref.WeakValueDictionary()
        self._serial = itertools.count()
        self._runner: web.AppRunner | None = None

    def for_script(self, script: UserScript) -> EpisodeRoute:
        """The route of one episode whose user follows `script` (forgotten once the episode's route is gone)."""
        token = f"{next(self._serial)}-{secrets.token_hex(4)}"
        route = EpisodeRoute(self, script, token)
        self._users[token] = route.user
        return route

    async def start(self) -> None:
        """Listen on a free port of 127.0.0.1."""
        app = web.Application()
        app.router.add_post("/episodes/{token}/v1/chat/completions", self._chat)
        app.router.add_get("/episodes/{token}/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        try:
            await site.start()
        except OSError as exc:
            raise BackendUnavailable(f"the scripted τ² user's endpoint cannot listen on 127.0.0.1: {exc}") from None
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}"

    async def generate(self, request: GenerateRequest) -> Completion:
        """Refused: a chat request alone does not say which task's script to follow."""
        raise BackendError(ONLY_TAU2)

    async def close(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _chat(self, request: web.Request) -> web.Response:
        user = self._users.get(request.match_info["token"])
        if user is None:
            return web.json_response({"error": {"message": "no episode of the scripted τ² user has this route"}}, status=404)
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"error": {"message": "the request body is not JSON"}}, status=400)
        messages = body.get("messages") if isinstance(body, dict) else None
        reply = user.reply(messages if isinstance(messages, list) else [])
        return web.json_response({
            "id": f"scripted-{next(self._serial)}", "object": "chat.completion", "created": 0, "model": self.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        })


async def build_scripted_user(spec: Any, pool: Any) -> ScriptedUserBackend:
    """The backend of a `backend: tau2-scripted` agent spec: no model, no server to start but its own endpoint."""
    return ScriptedUserBackend(spec.name, spec.model)


SCRIPTED_USER = BackendEntry(BACKEND, build_scripted_user, capabilities={"continue_user_turn": True, "structured_output": False},
                             needs_model=False, scripted_user=True)
"""The scripted τ² user's backend entry (registered in testbed.entries). It plays every user mode alike (it has no
framing to change), so a sweep over user modes can seat it in each; only τ² scenarios may name it."""
