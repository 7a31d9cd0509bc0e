"""A custom scenario in YAML: your personas, your user prompt, then drift onsets and a conversation graph.

    .venv/bin/python examples/02_custom_scenario.py
    .venv/bin/testbed run examples/custom_scenario/dialogue.yaml      # the same run from the command line

`custom_scenario/dialogue.yaml` names `personas.yaml` (who the simulated users are and how they
open) and `user-prompt.md` (the role-play prompt, with `{persona}`, `{goal}` and `{end_marker}`).
Every user turn is labelled; the drift onset is the first turn where the simulated user stopped
acting as the user, and the graph marks it.
"""

from __future__ import annotations

from pathlib import Path

import testbed
from _shared import agent, options
from testbed.analysis.drift import drift_summary, run_drift, summary_line
from testbed.analysis.figures.graph_drawing import draw_episode
from testbed.analysis.graphs import episode_graph, episode_messages
from testbed.store.labels import labels_frame

args = options(__doc__)
model = agent(args)
spec = Path(__file__).parent / "custom_scenario" / "dialogue.yaml"
scenario = testbed.load_scenario(spec, assistant=model, user=model)
summary = testbed.run(scenario, store=args.store, show_progress=True)
labelled = testbed.judge(args.store, summary.run_id)
print(f"run {summary.run_id}: {summary.done}/{summary.planned} dialogues; {labelled.scored} user turns labelled by {labelled.identity}")

store = testbed.open_store(args.store, readonly=True)
onsets = run_drift(store, summary.run_id, labelled.identity)
print(summary_line(drift_summary(onsets)))
episode = onsets.sort_values("onset", na_position="last").episode_id.iloc[0]
labels = labels_frame(store, summary.run_id, labelled.identity)
mine = labels[(labels.episode_id == episode) & (labels.status == "scored")]
graph = episode_graph(episode_messages(store, summary.run_id, episode), dict(zip(mine.turn_index, mine.label)))
path = draw_episode(graph, args.out / f"{episode}.png", f"{summary.run_id} · episode {episode} ({labelled.identity})")
print(f"conversation graph of episode {episode}: {path}")
