"""Training data from a judged run: SFT conversations that end in a genuine follow-up, and DPO pairs.

    .venv/bin/python examples/06_export_for_training.py
    .venv/bin/testbed export RUN --as dpo --judge local --out data/     # the CLI form

A probe shares one assistant answer across its user-turn variants (temperatures, samples,
perturbations), so a genuine follow-up and a failure that answered the same context make a
preference pair. Completions are user turns the simulated user really wrote; only turns the
judge scored count. Each file gets a data card (run, judge, counts, source licences).
"""

from __future__ import annotations

import datasets

import testbed
from _shared import agent, options
from testbed.export.training import ExportFilter, training_rows
from testbed.export.writing import write_export

args = options(__doc__, limit=4)
model = agent(args)
scenario = testbed.load_scenario("probe-gsm8k-perturb", limit=args.limit, assistant=model, user=model)
summary = testbed.run(scenario, store=args.store, show_progress=True)
labelled = testbed.judge(args.store, summary.run_id)

store = testbed.open_store(args.store, readonly=True)
chosen = ExportFilter()
for kind in ("sft", "dpo"):
    export = training_rows(store, summary.run_id, kind, labelled.identity, chosen)
    print(f"{kind}: {len(export.rows)} rows from {export.counts['judged_turns']} judged turns "
          f"({export.counts['positive_turns']} positive, {export.counts['failure_turns']} failures)")
    if not export.rows:
        continue
    data, card = write_export(export, chosen, args.out)
    loaded = datasets.load_dataset("json", data_files=str(data), split="train")
    print(f"  {data} loads with datasets: {loaded.num_rows} rows, columns {loaded.column_names}; card {card}")
