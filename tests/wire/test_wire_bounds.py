"""The wire recorder bounds what it forwards as the native backends do: a reply past `max_reply_bytes` is cut off, a
redirect off the origin is refused (and each hop recorded), and a trickling body cannot hold the run's end."""

from __future__ import annotations

import asyncio
import time

import aiohttp
from aiohttp import web

from bounded_reply_helpers import dialogue, errors
from http_agent_server import AgentServer, Witness, endless, huge, redirect
from testbed.running.runner import run_scenario
from testbed.wire import WireRecorder
from testbed.wire.faults import RetryPolicy

OFF_ORIGIN = "(another origin); the testbed does not follow redirects off the origin: fix"


async def test_a_trickling_agent_with_wire_lets_the_run_end_within_seconds_of_its_last_episode(tmp_path, store):
    async with AgentServer([endless(chunk=1, delay_s=0.2)]) as server:
        started = time.perf_counter()
        summary = await asyncio.wait_for(
            run_scenario(dialogue(tmp_path, server.url, items=1, timeout_s=1, max_retries=0), store, show_progress=False, wire=True),
            timeout=20)
        took = time.perf_counter() - started
    assert (summary.done, summary.errors) == (0, 1)
    assert errors(store, summary.run_id)[0].startswith("agent remote: timed out after 1s")
    assert took < 8, f"the run ended {took:.0f}s after it started, its only episode erroring after about 2s"


async def test_closing_the_recorder_cancels_a_forward_still_reading_a_trickle():
    async with AgentServer([], routes={"/v1/chat/completions": endless(chunk=1, delay_s=0.2)}) as server:
        recorder = WireRecorder()
        await recorder.start()
        tap = recorder.open_tap(retry=False)
        base = tap.route("assistant", f"{server.origin}/v1")
        async with aiohttp.ClientSession(headers=tap.headers) as http:
            pending = asyncio.ensure_future(http.post(f"{base}/chat/completions", json={"messages": []}))
            await asyncio.sleep(0.5)
            started = time.perf_counter()
            await asyncio.wait_for(recorder.close(), timeout=20)
            took = time.perf_counter() - started
            pending.cancel()
    assert took < 4, f"closing the recorder waited {took:.0f}s for a forward in flight"


async def test_with_wire_an_agent_redirect_off_the_origin_is_refused_and_every_hop_recorded(tmp_path, store):
    async with Witness() as witness:
        async with AgentServer([], routes={"/moved": redirect(witness.url)}) as server:
            server.script = [redirect("/moved")]
            summary = await run_scenario(dialogue(tmp_path, server.url, items=1), store, show_progress=False, wire=True)
    assert witness.requests == []
    moved = f"{server.origin}/moved"
    assert errors(store, summary.run_id) == [f"agent remote: {server.url} (redirected to {moved}) redirected to {witness.url} {OFF_ORIGIN} url"]
    [records] = store.wire_episodes(summary.run_id).values()
    assert [(w.path, w.status) for w in records] == [("respond", 307), ("moved", 307)]
    assert records[0].response == {"location": moved, "followed": True}
    assert records[1].response["location"] == witness.url and records[1].response["followed"] is False
    assert records[1].response["refused"].endswith(f"{OFF_ORIGIN} url")
    assert records[0].request["messages"] == records[1].request["messages"] == server.bodies[0]["messages"]


async def test_with_wire_a_same_origin_redirect_is_followed_and_both_hops_recorded(tmp_path, store):
    async def moved_here(request):
        return web.json_response({"content": "moved here"})

    async with AgentServer([], routes={"/moved": moved_here}) as server:
        server.script = [redirect("/moved")]
        summary = await run_scenario(dialogue(tmp_path, server.url, items=1), store, show_progress=False, wire=True)
    assert (summary.done, summary.errors) == (1, 0)
    [records] = store.wire_episodes(summary.run_id).values()
    assert [(w.path, w.status) for w in records[:2]] == [("respond", 307), ("moved", 200)]
    assert records[1].response == {"content": "moved here"}


async def test_with_wire_a_50_mb_reply_is_the_episodes_error_naming_the_agents_url(tmp_path, store):
    async with AgentServer([huge(50 * 1024 * 1024, declared=False), {"content": "fine"}]) as server:
        summary = await run_scenario(dialogue(tmp_path, server.url, items=2), store, show_progress=False, wire=True)
    assert (summary.done, summary.errors) == (1, 1)
    [reason] = errors(store, summary.run_id)
    assert reason.startswith(f"agent remote: reply from {server.url} exceeds max_reply_bytes (8 MiB): the body was cut off there")


async def test_a_framework_route_refuses_at_once_without_retrying():
    sent = []

    async def counted(request):
        sent.append(1)
        return await huge(1024 * 1024)(request)

    async with AgentServer([], routes={"/v1/chat/completions": counted}) as server, WireRecorder() as recorder:
        tap = recorder.open_tap(retry=True)
        policy = RetryPolicy(retries=3, max_reply_bytes=64 * 1024, backoff_base_s=0.01, backoff_cap_s=0.02)
        base = tap.route("assistant", f"{server.origin}/v1", policy)
        async with aiohttp.ClientSession(headers=tap.headers) as http:
            async with http.post(f"{base}/chat/completions", json={"messages": []}) as resp:
                status, body = resp.status, await resp.json()
        records = tap.take()
    assert status == 502 and len(sent) == 1
    assert body["error"]["message"] == tap.gave_up and "exceeds max_reply_bytes (64 KiB)" in tap.gave_up
    assert [r.status for r in records] == [502]
