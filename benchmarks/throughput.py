"""Does the testbed keep up with the server? Same prompts, same concurrency, two clients.

(a) the openai SDK straight at the vLLM server; (b) the testbed's own path: the assistant
participant on a transcript, the lean HTTP backend with its concurrency bound, and a SQLite
episode commit per request. Every request generates exactly `--max-tokens` tokens (`ignore_eos`)
so both sides do identical work; rounds alternate a, b, a, b and the median is reported.

    .venv/bin/python benchmarks/throughput.py                       # starts the embedded model
    .venv/bin/python benchmarks/throughput.py --base-url http://127.0.0.1:8000/v1 --model NAME -c 64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from testbed.backends.base import GenerateRequest
from testbed.backends.embedded import EMBEDDED_NAME, prepare_embedded_model
from testbed.backends.factory import VLLM_CAPABILITIES
from testbed.backends.openai_http import OpenAICompatibleBackend
from testbed.datasets import load_items
from testbed.loop.participants import Assistant
from testbed.specs.agent import AgentSpec, SamplingSpec
from testbed.specs.loader import ResolvedAgent
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.transcript import Message, Transcript


async def sdk_round(base_url: str, model: str, prompts: list[list[dict]], concurrency: int, max_tokens: int) -> float:
    """Requests per second of the openai SDK at a fixed concurrency."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600)
    gate = asyncio.Semaphore(concurrency)

    async def one(messages):
        async with gate:
            await client.chat.completions.create(model=model, messages=messages, max_tokens=max_tokens, temperature=0.0,
                                                 extra_body={"ignore_eos": True})

    started = time.perf_counter()
    await asyncio.gather(*(one(m) for m in prompts))
    elapsed = time.perf_counter() - started
    await client.close()
    return len(prompts) / elapsed


async def testbed_round(base_url: str, model: str, prompts: list[list[dict]], concurrency: int, max_tokens: int, store: Store) -> float:
    """Requests per second through the testbed's participant, backend and store."""
    spec = AgentSpec(name="bench", backend="vllm", model=model, base_url=base_url, concurrency=concurrency,
                     sampling=SamplingSpec(temperature=0.0, max_tokens=max_tokens))
    backend = OpenAICompatibleBackend(base_url=base_url, model=model, capabilities=VLLM_CAPABILITIES, concurrency=concurrency)
    await backend.start()

    class FixedLengthAssistant(Assistant):
        async def respond(self, transcript: Transcript) -> Message:
            """Answer with exactly max_tokens tokens, so both clients do identical work."""
            req = GenerateRequest(transcript.chat(), temperature=0.0, max_tokens=max_tokens, extra={"ignore_eos": True})
            c = await self.backend.generate(req)
            return Message("assistant", c.text, "bench", transcript.next_turn, req.sampling(), c.usage, c.finish_reason)

    assistant = FixedLengthAssistant(ResolvedAgent(spec, Path("bench.yaml"), None), backend)
    run_id = f"bench-{time.time_ns()}"
    store.begin_run(run_id, scenario="bench", kind="bench", spec={}, fingerprint=run_id, versions={}, git_revision=None, planned=len(prompts))

    async def one(i: int, messages: list[dict]):
        t = Transcript()
        t.append(Message("user", messages[0]["content"], "dataset", 0))
        reply = await assistant.respond(t)
        t.append(reply)
        key = EpisodeKey(f"e{i}", f"i{i}", "gsm8k", "bench", model, "-", "-", "none", 0.0, 0, "none")
        store.write_episode(run_id, EpisodeOutcome(key, t.messages, "done", "max_turns", usage=t.usage()))

    started = time.perf_counter()
    await asyncio.gather(*(one(i, m) for i, m in enumerate(prompts)))
    elapsed = time.perf_counter() - started
    await backend.close()
    return len(prompts) / elapsed


async def main_async(args: argparse.Namespace) -> dict:
    server = None
    base_url, model = args.base_url, args.model
    if base_url is None:
        from testbed.backends.vllm_server import VLLMServer

        server = VLLMServer(model_path=str(prepare_embedded_model()), served_name=EMBEDDED_NAME)
        print("starting the embedded model on vLLM ...", flush=True)
        await asyncio.to_thread(server.start)
        base_url, model = server.base_url, EMBEDDED_NAME
    try:
        prompts = [item.messages for item in load_items("gsm8k", limit=args.requests)]
        await sdk_round(base_url, model, prompts[: args.concurrency], args.concurrency, 8)
        results: dict[str, list[float]] = {"sdk": [], "testbed": []}
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "bench.sqlite")
            for r in range(args.rounds):
                results["sdk"].append(await sdk_round(base_url, model, prompts, args.concurrency, args.max_tokens))
                results["testbed"].append(await testbed_round(base_url, model, prompts, args.concurrency, args.max_tokens, store))
                print(f"round {r + 1}: sdk {results['sdk'][-1]:.2f} req/s, testbed {results['testbed'][-1]:.2f} req/s", flush=True)
            store.close()
        sdk, tb = statistics.median(results["sdk"]), statistics.median(results["testbed"])
        return {"concurrency": args.concurrency, "requests": len(prompts), "max_tokens": args.max_tokens, "rounds": args.rounds,
                "sdk_req_per_s": round(sdk, 3), "testbed_req_per_s": round(tb, 3), "ratio": round(tb / sdk, 3),
                "sdk_rounds": [round(x, 3) for x in results["sdk"]], "testbed_rounds": [round(x, 3) for x in results["testbed"]]}
    finally:
        if server is not None:
            server.stop()


def main() -> None:
    """Parse arguments, run the rounds, print one JSON line with the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--base-url", help="reuse a running vLLM server (default: start the embedded model)")
    p.add_argument("--model", default=EMBEDDED_NAME, help="served model name")
    p.add_argument("-c", "--concurrency", type=int, default=16)
    p.add_argument("-n", "--requests", type=int, default=64)
    p.add_argument("--max-tokens", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    result = asyncio.run(main_async(p.parse_args()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
