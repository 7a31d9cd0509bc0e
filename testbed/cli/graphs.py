"""`testbed graph`: conversation graphs, label transitions and drift survival of a judged run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from testbed.cli.app import StoreOpt, app, console, fail, open_store
from testbed.cli.output import output_folder
from testbed.cli.shell import labelled_run


def episode_named(known: list[str], wanted: str, run_id: str) -> str:
    """The one episode id `wanted` names, exactly or as a unique prefix."""
    if wanted in known:
        return wanted
    matches = [e for e in known if e.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        fail(f"episode {wanted!r} is ambiguous in run {run_id}: {', '.join(matches[:5])}{' …' if len(matches) > 5 else ''}")
    sample = ", ".join(known[:5]) + (" …" if len(known) > 5 else "") if known else "none"
    fail(f"episode {wanted!r} is not in run {run_id} (episodes: {sample})")
    raise AssertionError("unreachable: fail() exits")


def _survival_groups(onsets) -> dict:
    """One survival curve per combination of the conditions that vary in the run (else one, `all`)."""
    from testbed.analysis.drift import GROUP, survival_curve

    varying = [c for c in GROUP if c in onsets and onsets[c].nunique(dropna=False) > 1]
    if not varying:
        return {"all": survival_curve(onsets)}
    top = int(onsets.observed_turns.max()) if len(onsets) else 0
    return {" · ".join(str(v) for v in (keys if isinstance(keys, tuple) else (keys,))): survival_curve(g, top)
            for keys, g in onsets.groupby(varying, sort=True, dropna=False)}


def _draw_one(db, run_id: str, episode_id: str, labels, out: Path, conditions: dict) -> list[Path]:
    from testbed.analysis.graph_drawing import draw_episode
    from testbed.analysis.graphs import episode_graph, episode_messages, write_graphml

    mine = labels[(labels.episode_id == episode_id) & (labels.status == "scored") & labels.label.notna()]
    graph = episode_graph(episode_messages(db, run_id, episode_id), dict(zip(mine.turn_index.astype(int), mine.label)))
    graph.graph.update(run_id=run_id, episode_id=episode_id)
    who = f"{conditions.get('assistant_model', '?')} ↔ {conditions.get('user_model', '?')}"
    title = f"{run_id} · episode {episode_id} · {who} ({conditions.get('dataset', '?')})"
    return [write_graphml(graph, out / f"{episode_id}.graphml"), draw_episode(graph, out / f"{episode_id}.png", title)]


def _episode_line(onsets, episode_id: str) -> str:
    rows = onsets[onsets.episode_id == episode_id]
    if rows.empty:
        return f"episode {episode_id}: no generated user turns"
    row = rows.iloc[0]
    status = f"drift onset at user turn {row.onset:g} (turn {row.onset_turn_index:g})" if row.drifted else "no drift"
    return f"episode {episode_id}: {row.user_turns} user turns, {row.scored_turns} labelled, {status}"


def _pick(onsets, n: int) -> list[str]:
    """Drifted episodes first, earliest onset first, then the others; ids break ties for stable output."""
    ordered = onsets.assign(_late=onsets.onset.fillna(float("inf"))).sort_values(["_late", "episode_id"])
    return list(ordered.episode_id[:n])


@app.command()
def graph(
    run_id: Annotated[str, typer.Argument(help="run id (a unique prefix is enough)")],
    episode: Annotated[Optional[str], typer.Argument(help="one episode id or unique prefix (default: the run's overview)")] = None,
    judge: Annotated[str, typer.Option("--judge", "-j", help="whose labels: name, name:model, name@version")] = "local",
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="output folder (default graphs/<run id>/)")] = None,
    episodes: Annotated[int, typer.Option("--episodes", "-n", min=0, help="episode graphs to draw in the overview, drifted first")] = 6,
    store: StoreOpt = None,
) -> None:
    """Draw conversation graphs (GraphML + PNG): one episode, or the run's label transitions, in-role
    survival curves and its most telling episodes (drifted ones first, earliest onset first)."""
    from testbed.analysis.drift import drift_onsets, drift_summary, episode_conditions, summary_line, turns_frame
    from testbed.analysis.graph_drawing import draw_survival, draw_transitions
    from testbed.analysis.graphs import label_sequences, label_transition_graph, write_graphml
    from testbed.store.labels import labels_frame

    db = open_store(store, readonly=True)
    run, who = labelled_run(db, run_id, judge)
    labels, turns, conditions = labels_frame(db, run, who), turns_frame(db, run), episode_conditions(db, run)
    onsets = drift_onsets(labels, turns).merge(conditions, on="episode_id", how="left")
    by_episode = conditions.set_index("episode_id").to_dict("index")
    folder = output_folder(out if out is not None else Path("graphs") / run)
    written: list[Path] = []
    if episode is not None:
        eid = episode_named(list(conditions.episode_id), episode, run)
        written += _draw_one(db, run, eid, labels, folder, by_episode.get(eid, {}))
        summary = _episode_line(onsets, eid)
    else:
        transitions = label_transition_graph(label_sequences(labels, turns))
        transitions.graph.update(run_id=run, judge=str(who))
        written.append(write_graphml(transitions, folder / "transitions.graphml"))
        written.append(draw_transitions(transitions, folder / "transitions.png", f"{run} · label transitions ({who})"))
        written.append(draw_survival(_survival_groups(onsets), folder / "survival.png", f"{run} · in-role survival ({who})"))
        for eid in _pick(onsets, episodes):
            written += _draw_one(db, run, eid, labels, folder, by_episode.get(eid, {}))
        summary = summary_line(drift_summary(onsets))
    for path in written:
        console.print(f"wrote {path}", highlight=False, soft_wrap=True)
    console.print(f"{summary} (labels by {who})", highlight=False, soft_wrap=True)
