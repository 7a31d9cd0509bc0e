"""Quickstart: the interaction-awareness probe from Python — run, label every user turn, read the numbers.

    .venv/bin/python examples/01_quickstart.py            # starts the embedded model (about a minute on a CPU)

A model answers GSM8K questions, then writes the user's next turn after its own answer (raw: the
chat template's user turn continued; instructed: told to play the user). The local classifier
labels each user turn; the report gives task accuracy and follow-up rates with 95 % intervals.
Run it again and it resumes: finished episodes are kept in the store.
"""

from __future__ import annotations

import testbed
from _shared import agent, options

args = options(__doc__)
model = agent(args)
scenario = testbed.load_scenario("probe-gsm8k", limit=args.limit, assistant=model, user=model)
summary = testbed.run(scenario, store=args.store, show_progress=True)
print(f"run {summary.run_id}: {summary.done}/{summary.planned} episodes done, {summary.errors} errors")

labelled = testbed.judge(args.store, summary.run_id)
print(f"labelled {labelled.scored} user turns with {labelled.identity}")

store = testbed.open_store(args.store, readonly=True)
report = testbed.report_frame(store, summary.run_id, labelled.identity)
columns = ["user_mode", "temperature", "episodes", "accuracy", "followup_rate", "followup_lo", "followup_hi", "share_restate_question", "share_echo_assistant"]
print(report[[c for c in columns if c in report]].to_string(index=False))

turns = testbed.turns_df(store, summary.run_id, judge="learned")
print("\nOne simulated-user turn and its label:")
row = turns.iloc[0]
print(f"  [{row.user_mode}, T={row.temperature:g}] {row.user_turn[:160]!r} -> {row.judge_label}")
