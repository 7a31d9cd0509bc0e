"""A sweep with figures: models × datasets × temperatures × perturbations in one run, then the paper's plots.

    .venv/bin/python examples/03_sweep_with_figures.py [--agents smollm2,qwen2.5-coder-0.5b]
    .venv/bin/testbed run examples/sweep.yaml && .venv/bin/testbed plot RUN        # the CLI form

`sweep.yaml` expands into one probe per agent × dataset, all in one resumable run; each answer is
shared by its item's user-turn variants, and each model's server starts once. `plot` writes a
PNG per figure with the numbers beside it as CSV, and says which figure it skipped and why
(in-role survival needs multi-turn dialogues; one agent gives one point per dataset).
"""

from __future__ import annotations

from pathlib import Path

import testbed
from _shared import agent, options
from testbed.analysis.figures.drawing import write_figures

args = options(__doc__, extra=lambda p: p.add_argument("--agents", help="comma-separated agent specs (default: the embedded model)"))
agents = args.agents.split(",") if args.agents else [agent(args)]
sweep = testbed.load_sweep(Path(__file__).parent / "sweep.yaml", limit=args.limit, agents=agents)
print(f"{len(sweep.cells)} cells: " + ", ".join(f"{c.assistant.spec.name} × {c.spec.dataset}" for c in sweep.cells))
summary = testbed.run(sweep, store=args.store, show_progress=True)
labelled = testbed.judge(args.store, summary.run_id)
print(f"run {summary.run_id}: {summary.done}/{summary.planned} episodes; {labelled.scored} user turns labelled by {labelled.identity}")

store = testbed.open_store(args.store, readonly=True)
effects = testbed.perturbation_effects(store, summary.run_id, labelled.identity)
print(effects[["perturbation", "user_mode", "temperature", "pairs", "changed", "followup_none", "followup_perturbed"]].to_string(index=False))
result = write_figures(store, summary.run_id, labelled.identity, args.out / "plots")
for png in result.written:
    print(f"wrote {png} and {png.with_suffix('.csv').name}")
for name, reason in result.skipped:
    print(f"skipped {name}: {reason}")
