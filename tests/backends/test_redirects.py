"""No redirect leaves the origin: an HTTP agent or a model server that points elsewhere sends nothing there and is
the episode's error naming both URLs; a redirect within the origin is followed (and logged), a loop is cut."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web

from http_agent_server import AgentServer, Witness, redirect
from bounded_reply_helpers import dialogue, errors
from test_reply_bounds import ASK, REPLY
from testbed.backends.base import BackendError, BackendUnavailable
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.running.runner import run_scenario

OFF_ORIGIN = "(another origin); the testbed does not follow redirects off the origin: fix"


async def test_an_agent_redirected_to_another_port_errors_its_episode_and_the_other_host_hears_nothing(tmp_path, store):
    async with Witness() as witness:
        async with AgentServer([redirect(witness.url)]) as server:
            summary = await run_scenario(dialogue(tmp_path, server.url, items=1), store, show_progress=False)
    assert (summary.done, summary.errors) == (0, 1)
    assert errors(store, summary.run_id) == [f"agent remote: {server.url} redirected to {witness.url} {OFF_ORIGIN} url"]
    assert witness.requests == [], "the conversation must not reach the other host"
    assert len(server.bodies) == 1, "a refused redirect is not retried"


@pytest.mark.parametrize("location", ["{witness}", "//127.0.0.1:{port}/elsewhere", "https://127.0.0.1:{own}/respond"])
async def test_a_model_server_redirect_to_another_scheme_host_or_port_is_refused(location):
    async with Witness() as witness:
        port = witness.url.split(":")[2].split("/")[0]
        async with AgentServer([], routes={"/v1/chat/completions": lambda r: redirect(target)(r)}) as server:
            target = location.format(witness=witness.url, port=port, own=server.origin.rsplit(":", 1)[1])
            backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m", max_retries=3)
            with pytest.raises(BackendError) as caught:
                await backend.generate(ASK)
            await backend.close()
    assert not isinstance(caught.value, BackendUnavailable)
    reason = caught.value.reason
    assert reason.startswith(f"{server.origin}/v1/chat/completions redirected to ") and reason.endswith(f"{OFF_ORIGIN} base_url")
    assert witness.requests == []


async def test_a_same_origin_307_is_followed_with_the_body_and_logged(caplog):
    moved = []

    async def new_home(request: web.Request) -> web.Response:
        moved.append(await request.json())
        return web.json_response(REPLY)

    routes = {"/v2/chat/completions": new_home,
              "/v1/chat/completions": lambda r: redirect("/v2/chat/completions")(r)}
    async with AgentServer([], routes=routes) as server:
        backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m")
        with caplog.at_level(logging.INFO, logger="testbed.redirects"):
            completion = await backend.generate(ASK)
        await backend.close()
    assert completion.text == "fine" and moved[0]["messages"] == ASK.messages
    assert [r.getMessage() for r in caplog.records] == [
        f"HTTP 307: {server.origin}/v1/chat/completions redirected to {server.origin}/v2/chat/completions (same origin, followed)"]


async def test_a_redirect_loop_is_cut_after_five_hops():
    hits = []

    async def loop(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(status=307, headers={"Location": "/v1/chat/completions"})

    async with AgentServer([], routes={"/v1/chat/completions": loop}) as server:
        backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m", max_retries=2)
        with pytest.raises(BackendError, match="redirected more than 5 times"):
            await backend.generate(ASK)
        await backend.close()
    assert len(hits) == 6


async def test_the_models_check_refuses_a_redirect_off_the_origin():
    async with Witness() as witness:
        async with AgentServer([], routes={"/v1/models": lambda r: redirect(witness.url, 302)(r)}) as server:
            backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m")
            with pytest.raises(BackendUnavailable, match=f"{server.origin}/v1/models redirected to {witness.url}"):
                await backend.start()
            await backend.close()
    assert witness.requests == []


async def test_a_same_origin_303_becomes_a_get_without_the_conversation():
    seen = []

    async def answer(request: web.Request) -> web.Response:
        seen.append((request.method, await request.read()))
        return web.json_response(REPLY)

    routes = {"/v1/chat/completions": redirect("/v1/answer", 303), "/v1/answer": answer}
    async with AgentServer([], routes=routes) as server:
        backend = OpenAICompatibleBackend(base_url=f"{server.origin}/v1", model="m")
        completion = await backend.generate(ASK)
        await backend.close()
    assert completion.text == "fine" and seen == [("GET", b"")]
