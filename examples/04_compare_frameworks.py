"""Comparing agent frameworks: the same dialogue run natively and through LangGraph, side by side.

    .venv/bin/python examples/04_compare_frameworks.py [--frameworks native,langgraph,autogen,camel]
    .venv/bin/testbed compare dialogue-gsm8k --frameworks native,langgraph --limit 2   # the CLI form

Each framework drives the same pair of agents (same endpoint, system prompts, sampling and stop
rules) with its own mechanism; every request it sends is kept in the wire log. Frameworks run the
instructed user only (their model clients cannot continue a user turn). `testbed.compare` runs
and labels one run per framework (resuming them when run again) and pairs each framework's
episodes with the native ones on the same episode ids, as `testbed compare` does.
"""

from __future__ import annotations

import testbed
from _shared import agent, options

args = options(__doc__, limit=1, extra=lambda p: p.add_argument("--frameworks", default="native,langgraph",
                                                                 help="comma-separated: native,autogen,langgraph,camel"))
model = agent(args)
scenario = testbed.load_scenario("dialogue-gsm8k", limit=args.limit, assistant=model, user=model, user_modes=["instructed"])
comparison = testbed.compare(scenario, args.frameworks.split(","), store=args.store, show_progress=True)
for done in comparison.runs:
    print(f"{done.framework}: run {done.summary.run_id}, {done.summary.done}/{done.summary.planned} dialogues, "
          f"{done.labelled.scored} user turns labelled by {done.labelled.identity}")

table = comparison.frame
columns = ["framework", "episodes", "errors", "user_turns", "followup_rate", "drift_share", "prompt_tokens_per_turn",
           "client_cpu_ms_per_turn", "turns_differ", "followup_change"]
print(table[[c for c in columns if c in table]].to_string(index=False))
