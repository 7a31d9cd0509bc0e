"""Bring your own agent: your Python agent (here `notes_agent.py`, a model with a retrieval step) faces simulated users.

    .venv/bin/python examples/07_bring_your_own_agent.py --base-url http://127.0.0.1:8000/v1
    PYTHONPATH=examples .venv/bin/testbed run dialogue-gsm8k --assistant examples/byo_agent/notes-agent.yaml   # the CLI form

The assistant is `backend: python` with `callable: notes_agent:NotesAgent`: the testbed builds one
NotesAgent per dialogue and awaits its `respond` at every assistant turn; the simulated user is the
bare model on the same server. The agent wraps that server through the `openai` client, so this
example needs `--base-url` (any OpenAI-compatible server serving smollm2-135m-instruct).
"""

from __future__ import annotations

import sys

import yaml

import testbed
from _shared import agent, options

args = options(__doc__, limit=1)
if not args.base_url:
    sys.exit("this example wraps a running server: pass --base-url http://HOST:PORT/v1")
spec = yaml.safe_load(open(__file__.replace("07_bring_your_own_agent.py", "byo_agent/notes-agent.yaml")))
spec["options"]["base_url"] = args.base_url
mine = args.out / "notes-agent.yaml"
mine.write_text(yaml.safe_dump(spec))
scenario = testbed.load_scenario("dialogue-gsm8k", limit=args.limit, assistant=mine, user=agent(args), user_modes=["instructed"])
summary = testbed.run(scenario, store=args.store)
print(f"run {summary.run_id}: {summary.done}/{summary.planned} dialogues with {spec['name']}, {summary.errors} errors")
store = testbed.open_store(args.store, readonly=True)
answers = testbed.messages_df(store, summary.run_id)
answers = answers[answers.speaker == spec["name"]]
print(f"{len(answers)} turns by {spec['name']}; the first: {answers.content.iloc[0][:200]!r}" if len(answers) else "no turns")
