"""Comparing agent frameworks: the same dialogue run natively and through LangGraph, side by side.

    .venv/bin/python examples/04_compare_frameworks.py [--frameworks native,langgraph,autogen,camel]
    .venv/bin/testbed compare dialogue-gsm8k --frameworks native,langgraph --limit 2   # the CLI form

Each framework drives the same pair of agents (same endpoint, system prompts, sampling and stop
rules) with its own mechanism; every request it sends is kept in the wire log. Frameworks run the
instructed user only (their model clients cannot continue a user turn). The comparison
pairs each framework's episodes with the native ones on the same episode ids.
"""

from __future__ import annotations

import testbed
from _shared import agent, options
from testbed.analysis.framework_compare import compare_frameworks

args = options(__doc__, limit=1, extra=lambda p: p.add_argument("--frameworks", default="native,langgraph",
                                                                 help="comma-separated: native,autogen,langgraph,camel"))
model = agent(args)
scenario = testbed.load_scenario("dialogue-gsm8k", limit=args.limit, assistant=model, user=model, user_modes=["instructed"])
runs, judges = {}, {}
for name in args.frameworks.split(","):
    summary = testbed.run(scenario, store=args.store, framework=name, show_progress=True)
    runs[name] = summary.run_id
    judges[name] = testbed.judge(args.store, summary.run_id).identity
    print(f"{name}: run {summary.run_id}, {summary.done}/{summary.planned} dialogues")

store = testbed.open_store(args.store, readonly=True)
table = compare_frameworks(store, runs, judges)
columns = ["framework", "episodes", "errors", "user_turns", "followup_rate", "drift_share", "prompt_tokens_per_turn",
           "client_cpu_ms_per_turn", "turns_differ", "followup_change"]
print(table[[c for c in columns if c in table]].to_string(index=False))
