"""Pictures of conversation graphs and drift survival (matplotlib, headless Agg backend).

The survival curves are `testbed.analysis.figures.survival_drawing.draw_survival`, shared with `testbed plot`
and re-exported here for the overview (`testbed.analysis.figures.run_graphs`).

The episode picture is built for one question — *when did the simulated user leave its role?* —
so time runs left to right, each role has its own row, drift turns are red/orange against a
blue-green in-role family, and the onset is ringed, annotated and marked by a dashed line.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import FancyArrowPatch, Patch  # noqa: E402

from testbed.analysis.graphs import START  # noqa: E402
from testbed.analysis.figures.survival_drawing import draw_survival  # noqa: E402, F401
from testbed.judges.taxonomy import taxonomy  # noqa: E402
from testbed.transcript import is_tool, is_user  # noqa: E402

DRIFT_COLOURS = {"echo_assistant": "#d62728", "meta_planning": "#ff7f0e"}
"""Drift labels in strong warm colours; any other drift label falls back to crimson."""

IN_ROLE_COLOURS = {
    "genuine_followup": "#2ca02c", "restate_question": "#1f77b4", "new_question": "#17becf",
    "short_filler": "#9ecae1", "degenerate": "#6a51a3", "other": "#74a9cf",
}
"""Every other label in the blue-green family, so red means drift and nothing else."""

ROLE_COLOURS = {"assistant": "#9e9e9e", "system": "#d9d9d9", "user": "#ffffff", "tool": "#e7d4e8"}
EDGE_COLOURS = {"restates": "#1f77b4", "echoes": "#d62728"}
ROWS = ("user", "assistant", "tool", "system")
"""The rows from top to bottom; user and assistant are always drawn, the others only when the episode has such a message."""
_TOOL_CAPTION = 14
_NODE_SIZE = 620
_SHRINK = 14


def label_colour(label: str) -> str:
    """The colour of a label: warm for drift labels, blue-green for the rest, grey for unknown ones."""
    if label in taxonomy().drift_labels:
        return DRIFT_COLOURS.get(label, "#b2182b")
    return IN_ROLE_COLOURS.get(label, "#74a9cf" if label else ROLE_COLOURS["user"])


def _node_colour(data: dict) -> str:
    if not is_user(data):
        return ROLE_COLOURS.get(data["role"], "#d9d9d9")
    return label_colour(data["label"])


def _save(fig: plt.Figure, path: Path | str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return path


def _rad(ax: plt.Axes, a: tuple[float, float], b: tuple[float, float], bulge: float) -> float:
    """Curvature that lifts an arc about `bulge` pixels above its chord whatever the distance it
    spans (an arc3 curve peaks at half its control-point offset, rad × distance), so that long arcs
    clear the nodes and captions they pass over without leaving the axes."""
    (x1, y1), (x2, y2) = ax.transData.transform(a), ax.transData.transform(b)
    distance = max(1.0, ((x2 - x1) ** 2 + (y2 - y1) ** 2) ** 0.5)
    return min(0.5, 2 * bulge / distance)


def _tools(data: dict) -> str:
    """The tool names a node carries, cut to fit beside the next node, `$` escaped so matplotlib never reads math."""
    names = data.get("tools") or ""
    cut = names if len(names) <= _TOOL_CAPTION else names[:_TOOL_CAPTION - 1] + "…"
    return cut.replace("$", r"\$")


def _node_caption(node: int, data: dict, first_user: int | None) -> str:
    if is_tool(data):
        return f"{_tools(data)}\n{'error' if data.get('tool_error') else 'result'}".strip()
    if data.get("tools"):
        return f"calls\n{_tools(data)}"
    if is_user(data):
        if data["label"]:
            return data["label"].replace("_", " ")
        return "request" if node == first_user else "unlabelled" if data["ordinal"] else "user"
    return f"{data['words']} words"


def _draw_edges(ax: plt.Axes, graph: nx.DiGraph, pos: dict) -> None:
    for a, b, data in graph.edges(data=True):
        if data["kind"] == "reply":
            ax.add_patch(FancyArrowPatch(pos[a], pos[b], arrowstyle="-|>", mutation_scale=10, color="#bdbdbd",
                                         linewidth=1.0, shrinkA=_SHRINK, shrinkB=_SHRINK, zorder=2))
        elif data["kind"] in EDGE_COLOURS:
            rad = _rad(ax, pos[a], pos[b], min(120.0, 70.0 + 6.0 * abs(a - b)))
            ax.add_patch(FancyArrowPatch(
                pos[a], pos[b], connectionstyle=f"arc3,rad={rad:.3f}", arrowstyle="-|>", mutation_scale=16,
                color=EDGE_COLOURS[data["kind"]], linewidth=0.8 + 3.0 * float(data["weight"]), alpha=0.75,
                shrinkA=_SHRINK, shrinkB=_SHRINK, zorder=3))


def _draw_nodes(ax: plt.Axes, graph: nx.DiGraph, pos: dict) -> None:
    first_user = next((n for n in sorted(graph) if is_user(graph.nodes[n])), None)
    for n, data in graph.nodes(data=True):
        x, y = pos[n]
        user = is_user(data)
        ax.scatter([x], [y], s=_NODE_SIZE, c=_node_colour(data), edgecolors="#1f77b4" if user else "#616161",
                   linewidths=1.2, zorder=4)
        dark = user and data["label"] not in ("", "short_filler")
        ax.text(x, y, str(n), ha="center", va="center", fontsize=9, fontweight="bold",
                color="white" if dark else "black", zorder=5)
        if data.get("onset"):
            continue
        ax.text(x, y + (0.2 if user else -0.2), _node_caption(n, data, first_user), ha="center",
                va="bottom" if user else "top", fontsize=8, color="#b2182b" if data.get("drift") else "#333333",
                fontweight="bold" if data.get("drift") else "normal", zorder=6,
                bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none"})


def _mark_onset(ax: plt.Axes, graph: nx.DiGraph, pos: dict, onset: int) -> None:
    x, y = pos[onset]
    data = graph.nodes[onset]
    ax.axvspan(onset - 0.5, max(graph) + 0.8, color="#d62728", alpha=0.06, zorder=0)
    ax.axvline(onset, color="#d62728", linestyle="--", linewidth=1.4, zorder=1)
    ax.scatter([x], [y], s=_NODE_SIZE * 2.6, facecolors="none", edgecolors="#d62728", linewidths=2.6, zorder=6)
    ax.annotate(f"drift onset (turn {onset})\nuser turn {data['ordinal']}: {data['label']}", xy=(x, y + 0.17),
                xytext=(x, 1.72), ha="center", va="center", fontsize=9, fontweight="bold", color="#b2182b", zorder=7,
                bbox={"boxstyle": "round,pad=0.3", "facecolor": "#fff5f0", "edgecolor": "#d62728"},
                arrowprops={"arrowstyle": "-|>", "color": "#d62728", "linewidth": 1.5})


def draw_episode(graph: nx.DiGraph, path_png: Path | str, title: str) -> Path:
    """Draw an episode graph: x = turn index, one row per role, drift onset ringed and annotated.

    Tool results have their own row, and a message that calls tools is captioned with their names.
    Reply edges are thin grey arrows; source edges are curved arrows, blue when the user restates
    an earlier user turn and red when it echoes the assistant, thicker the more it copied. Turns
    after the onset are shaded, so the in-role and drifted parts of the dialogue read at a glance.
    """
    nodes = sorted(graph.nodes)
    roles = {graph.nodes[n]["role"] for n in nodes}
    rows = {r: 1.0 - k for k, r in enumerate(r for r in ROWS if r in roles or r in ("user", "assistant"))}
    pos = {n: (float(n), rows.get(graph.nodes[n]["role"], min(rows.values()))) for n in nodes}
    span = (max(nodes) - min(nodes)) if nodes else 1
    fig, ax = plt.subplots(figsize=(min(32.0, max(7.0, 1.05 * span + 3.0)), 2.9 + 1.2 * len(rows)))
    ax.set_xlim(min(nodes, default=0) - 0.8, max(nodes, default=1) + 0.8)
    ax.set_ylim(min(rows.values()) - 0.55, 1.95)
    _draw_edges(ax, graph, pos)
    _draw_nodes(ax, graph, pos)
    onset = next((n for n in nodes if graph.nodes[n].get("onset")), None)
    if onset is not None:
        _mark_onset(ax, graph, pos, onset)
    ax.set_yticks(list(rows.values()), list(rows.keys()))
    ax.set_xticks(nodes)
    ax.set_xlabel("turn index (time →)")
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)
    ax.tick_params(axis="y", length=0)
    ax.set_title(title, fontsize=11, loc="left")
    ax.legend(handles=_episode_legend(graph), loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=4,
              fontsize=8, frameon=False)
    return _save(fig, path_png)


def _episode_legend(graph: nx.DiGraph) -> list:
    data = [d for _, d in graph.nodes(data=True)]
    handles = [Patch(facecolor=label_colour(label), edgecolor="#1f77b4", label=label.replace("_", " ") +
                     (" (drift)" if label in taxonomy().drift_labels else ""))
               for label in sorted({d["label"] for d in data if d["label"]})]
    if any(is_user(d) and not d["label"] for d in data):
        handles.append(Patch(facecolor="white", edgecolor="#1f77b4", label="user: request or unlabelled"))
    for role in ("assistant", "tool", "system"):
        if any(d["role"] == role for d in data):
            handles.append(Patch(facecolor=ROLE_COLOURS[role], edgecolor="#616161", label=role))
    kinds = {d["kind"] for _, _, d in graph.edges(data=True)}
    handles.append(Line2D([], [], color="#bdbdbd", label="reply"))
    handles += [Line2D([], [], color=EDGE_COLOURS[k], linewidth=3, label=f"{k} (width = similarity)")
                for k in ("restates", "echoes") if k in kinds]
    if any(d.get("onset") for d in data):
        handles.append(Line2D([], [], color="#d62728", linestyle="--", marker="o", markerfacecolor="none",
                              markersize=10, label="drift onset"))
    return handles


def _circle(nodes: list[str]) -> dict[str, tuple[float, float]]:
    """Nodes on the unit circle clockwise from the top, so START sits at twelve o'clock."""
    step = 2 * math.pi / max(1, len(nodes))
    return {n: (math.cos(math.pi / 2 - i * step), math.sin(math.pi / 2 - i * step)) for i, n in enumerate(nodes)}


def _transition_order(graph: nx.DiGraph) -> list[str]:
    known = [label for label in taxonomy().labels if label in graph]
    return ([START] if START in graph else []) + known + sorted(n for n in graph if n != START and n not in known)


def draw_transitions(graph: nx.DiGraph, path_png: Path | str, title: str) -> Path:
    """Draw a label transition graph on a circle: node size and caption by count, edge width and
    percentage by the share of transitions out of the source label (printed near the source, so a
    node's outgoing shares read together); a label that repeats shows its share as "stays"."""
    fig, ax = plt.subplots(figsize=(8.5, 8.5))
    nodes = _transition_order(graph)
    pos = _circle(nodes)
    top = max((graph.nodes[n]["count"] for n in nodes if n != START), default=1)
    sizes = {n: 900.0 if n == START else 500.0 + 2000.0 * graph.nodes[n]["count"] / top for n in nodes}
    colours = ["#333333" if n == START else ROLE_COLOURS["system"] if n == "unscored" else label_colour(n) for n in nodes]
    style = "arc3,rad=0.15"
    drift = taxonomy().drift_labels
    nx.draw_networkx_nodes(graph, pos, nodelist=nodes, node_size=[sizes[n] for n in nodes], node_color=colours,
                           edgecolors="#444444", ax=ax)
    edges = [(a, b) for a, b in graph.edges if a != b]
    nx.draw_networkx_edges(graph, pos, edgelist=edges, width=[0.6 + 7.0 * graph.edges[e]["weight"] for e in edges],
                           edge_color=["#d62728" if b in drift else "#666666" for _, b in edges], alpha=0.65,
                           arrowsize=16, ax=ax, node_size=[sizes[n] for n in nodes], nodelist=nodes,
                           connectionstyle=style, arrowstyle="-|>")
    nx.draw_networkx_edge_labels(graph, pos, {e: f"{graph.edges[e]['weight']:.0%}" for e in edges}, label_pos=0.28,
                                 font_size=8, ax=ax, node_size=[sizes[n] for n in nodes], nodelist=nodes,
                                 connectionstyle=style, rotate=False,
                                 bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.9})
    for n in nodes:
        x, y = pos[n]
        count = graph.nodes[n]["count"]
        caption = f"{n}\n{count} episodes" if n == START else f"{n}\nn={count}"
        if graph.has_edge(n, n):
            caption += f", stays {graph.edges[n, n]['weight']:.0%}"
        offset = math.sqrt(sizes[n]) / 2 + 10
        ax.annotate(caption, (x, y), xytext=(x * offset, y * offset), textcoords="offset points",
                    ha="center" if abs(x) < 0.3 else "left" if x > 0 else "right",
                    va="center" if abs(y) >= 0.3 and abs(x) >= 0.3 else "bottom" if y > 0 else "top" if abs(x) < 0.3 else "center",
                    fontsize=9, fontweight="bold" if n in drift else "normal", color="#b2182b" if n in drift else "#222222")
        if graph.has_edge(n, n):
            ax.scatter([x], [y], s=sizes[n] * 1.5, facecolors="none", linewidths=0.6 + 7.0 * graph.edges[n, n]["weight"],
                       edgecolors="#d62728" if n in drift else "#666666", alpha=0.45, zorder=1)
    ax.set_xlim(-1.75, 1.75)
    ax.set_ylim(-1.6, 1.6)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.set_title(title + "\n(edge width and % = share of transitions out of the source; ring = label repeats)", fontsize=10)
    return _save(fig, path_png)
