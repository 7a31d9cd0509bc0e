"""A hosted judge through litellm: label a probe's user turns with an LLM judge, then measure its agreement with the local one.

    OPENAI_API_KEY=... .venv/bin/python examples/05_hosted_judge.py                    # gpt-4o-mini via litellm
    .venv/bin/python examples/05_hosted_judge.py --judge-model agents/my-provider.yaml  # any litellm agent spec

The failure-mode judge (judges/failure-modes.yaml) is a prompt plus an agent; the agent here is
a litellm one, so any provider litellm knows works (`model: anthropic/...`, `openai/...`). A
verdict that cannot be parsed is stored as *unscored*, never as a label. With `--base-url` and no
`--judge-model`, the judge runs through litellm against that vLLM server instead (no key needed).
"""

from __future__ import annotations

import os

import yaml

import testbed
from _shared import agent, options
from testbed.analysis.judge_quality.agreement import compare
from testbed.judges.taxonomy import taxonomy
from testbed.store.labels import labels_frame

args = options(__doc__, limit=2, extra=lambda p: p.add_argument("--judge-model", help="agent spec the judge runs on"))
judge_model = args.judge_model or "agents/litellm-gpt-mini.yaml"
if args.base_url and not args.judge_model:
    os.environ.setdefault("LOCAL_SERVER_KEY", "not-checked")
    judge_model = str(args.out / "litellm-judge.yaml")
    with open(judge_model, "w") as f:
        yaml.safe_dump({"name": "litellm-local", "backend": "litellm", "model": "openai/smollm2-135m-instruct",
                        "base_url": args.base_url, "api_key_env": "LOCAL_SERVER_KEY",
                        "sampling": {"temperature": 0.0, "max_tokens": 160}, "concurrency": 8}, f)

model = agent(args)
scenario = testbed.load_scenario("probe-gsm8k", limit=args.limit, assistant=model, user=model)
summary = testbed.run(scenario, store=args.store, show_progress=True)
local = testbed.judge(args.store, summary.run_id, "local")
hosted = testbed.judge(args.store, summary.run_id, "failure-modes", model=judge_model)
print(f"{hosted.identity}: {hosted.scored} turns scored, {hosted.unscored} unscored (unparseable verdicts)")

store = testbed.open_store(args.store, readonly=True)
a = labels_frame(store, summary.run_id, local.identity)
b = labels_frame(store, summary.run_id, hosted.identity)
both = a[a.status == "scored"].merge(b[b.status == "scored"], on=["episode_id", "turn_index"], suffixes=("_local", "_hosted"))
if both.empty:
    print("no turn was scored by both judges; nothing to compare")
else:
    result = compare(list(both.label_local), list(both.label_hosted), taxonomy().labels)
    print(f"{len(both)} turns scored by both: Cohen's kappa {result.kappa:.2f}, raw agreement {result.observed:.0%}")
