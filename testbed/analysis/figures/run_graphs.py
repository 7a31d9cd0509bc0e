"""A judged run's graphs as files: label transitions, in-role survival and its most telling episodes, or one episode.

`testbed graph` is `draw_run_graphs` with options and printing around it. The heavy imports (pandas,
networkx, matplotlib) wait for the call, so `find_episode` stays cheap for every command that resolves
an episode prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from testbed.store import JudgeIdentity, Store

OVERVIEW_EPISODES = 6
"""Episode graphs drawn in a run's overview by default."""


class UnknownEpisode(LookupError):
    """An episode id or prefix that names no episode of the run, or several."""


@dataclass(frozen=True)
class RunGraphs:
    """What `draw_run_graphs` wrote, in order, and its one-line summary (the run's drift, or the episode's)."""

    paths: list[Path]
    summary: str


def find_episode(known: list[str], wanted: str, run_id: str) -> str:
    """The one episode id `wanted` names, exactly or as a unique prefix; UnknownEpisode saying why otherwise."""
    if wanted in known:
        return wanted
    matches = [e for e in known if e.startswith(wanted)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownEpisode(f"episode {wanted!r} is ambiguous in run {run_id}: {', '.join(matches[:5])}{' …' if len(matches) > 5 else ''}")
    sample = ", ".join(known[:5]) + (" …" if len(known) > 5 else "") if known else "none"
    raise UnknownEpisode(f"episode {wanted!r} is not in run {run_id} (episodes: {sample})")


def survival_groups(onsets: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """One survival curve per combination of the conditions that vary in the run (else one, `all`)."""
    from testbed.analysis.drift import GROUP, survival_curve

    varying = [c for c in GROUP if c in onsets and onsets[c].nunique(dropna=False) > 1]
    if not varying:
        return {"all": survival_curve(onsets)}
    top = int(onsets.observed_turns.max()) if len(onsets) else 0
    return {" · ".join(str(v) for v in (keys if isinstance(keys, tuple) else (keys,))): survival_curve(g, top)
            for keys, g in onsets.groupby(varying, sort=True, dropna=False)}


def pick_episodes(onsets: pd.DataFrame, n: int) -> list[str]:
    """Drifted episodes first, earliest onset first, then the others; ids break ties for stable output."""
    ordered = onsets.assign(_late=onsets.onset.fillna(float("inf"))).sort_values(["_late", "episode_id"])
    return list(ordered.episode_id[:n])


def episode_line(onsets: pd.DataFrame, episode_id: str) -> str:
    """One episode's user turns, labels and drift onset, as a line."""
    rows = onsets[onsets.episode_id == episode_id]
    if rows.empty:
        return f"episode {episode_id}: no generated user turns"
    row = rows.iloc[0]
    status = f"drift onset at user turn {row.onset:g} (turn {row.onset_turn_index:g})" if row.drifted else "no drift"
    return f"episode {episode_id}: {row.user_turns} user turns, {row.scored_turns} labelled, {status}"


def draw_episode_files(store: Store, run_id: str, episode_id: str, labels: pd.DataFrame, out: Path,
                       conditions: dict) -> list[Path]:
    """One episode's conversation graph as `<episode>.graphml` and `<episode>.png` in `out`, its labels on the user turns."""
    from testbed.analysis.figures.graph_drawing import draw_episode
    from testbed.analysis.graphs import episode_graph, episode_messages, write_graphml

    mine = labels[(labels.episode_id == episode_id) & (labels.status == "scored") & labels.label.notna()]
    graph = episode_graph(episode_messages(store, run_id, episode_id), dict(zip(mine.turn_index.astype(int), mine.label)))
    graph.graph.update(run_id=run_id, episode_id=episode_id)
    who = f"{conditions.get('assistant_model', '?')} ↔ {conditions.get('user_model', '?')}"
    title = f"{run_id} · episode {episode_id} · {who} ({conditions.get('dataset', '?')})"
    return [write_graphml(graph, out / f"{episode_id}.graphml"), draw_episode(graph, out / f"{episode_id}.png", title)]


def draw_run_graphs(store: Store, run_id: str, who: JudgeIdentity, out: Path | str, *, episode: str | None = None,
                    episodes: int = OVERVIEW_EPISODES) -> RunGraphs:
    """Draw a run's graphs (GraphML + PNG) into `out`, with the labels of `who`.

    With `episode` (an id or unique prefix; UnknownEpisode otherwise), that episode alone; else the
    overview: `transitions.graphml`/`.png`, `survival.png` and the `episodes` most telling
    episodes (drifted first, earliest onset first). `run_id` is the full id.
    """
    from testbed.analysis.drift import drift_onsets, drift_summary, episode_conditions, summary_line, turns_frame
    from testbed.store.labels import labels_frame

    folder = Path(out)
    labels, turns, conditions = labels_frame(store, run_id, who), turns_frame(store, run_id), episode_conditions(store, run_id)
    onsets = drift_onsets(labels, turns).merge(conditions, on="episode_id", how="left")
    by_episode = conditions.set_index("episode_id").to_dict("index")
    if episode is not None:
        eid = find_episode(list(conditions.episode_id), episode, run_id)
        paths = draw_episode_files(store, run_id, eid, labels, folder, by_episode.get(eid, {}))
        return RunGraphs(paths, episode_line(onsets, eid))
    paths = _draw_overview(run_id, who, labels, turns, onsets, folder)
    for eid in pick_episodes(onsets, episodes):
        paths += draw_episode_files(store, run_id, eid, labels, folder, by_episode.get(eid, {}))
    return RunGraphs(paths, summary_line(drift_summary(onsets)))


def _draw_overview(run_id: str, who: JudgeIdentity, labels: pd.DataFrame, turns: pd.DataFrame, onsets: pd.DataFrame,
                   folder: Path) -> list[Path]:
    from testbed.analysis.figures.graph_drawing import draw_survival, draw_transitions
    from testbed.analysis.graphs import label_sequences, label_transition_graph, write_graphml

    transitions = label_transition_graph(label_sequences(labels, turns))
    transitions.graph.update(run_id=run_id, judge=str(who))
    return [write_graphml(transitions, folder / "transitions.graphml"),
            draw_transitions(transitions, folder / "transitions.png", f"{run_id} · label transitions ({who})"),
            draw_survival(survival_groups(onsets), folder / "survival.png", f"{run_id} · in-role survival ({who})")]
