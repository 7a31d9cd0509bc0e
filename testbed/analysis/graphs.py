"""Conversation graphs (networkx): who replies to whom, which earlier turn a user turn copies, and
how labels follow one another; written as GraphML so other tools (Gephi, yEd) can open them.

Drawing lives in `testbed.analysis.figures.graph_drawing`, so that building graphs never imports matplotlib.
"""

from __future__ import annotations

import difflib
import json
import re
from pathlib import Path

import networkx as nx
import pandas as pd

from testbed.judges.taxonomy import taxonomy
from testbed.store import Store
from testbed.transcript import SPOKEN_ROLES, TOOL_CALLS_COLUMN, Message, generated_user_turns, is_user

SOURCE_THRESHOLD = 0.5
"""Least similarity for a source edge: at least half of the user turn is copied from the target."""

START = "START"
"""The transition graph's entry node: where every episode's first labelled user turn comes from."""

EXCERPT_CHARS = 80
_RATIO_TOKENS = 400
_WORD = re.compile(r"\w+")
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_SCALARS = (str, int, float, bool)


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


def _grams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def similarity(turn: str, earlier: str) -> tuple[float, float]:
    """How much of `turn` is copied from `earlier`: (score, ratio), both in [0, 1].

    score = max(containment, ratio). *Containment* is the share of the turn's word n-grams that
    also occur in the earlier text (3-grams from 6 words on, 2-grams for 3–5 words, none below:
    single shared words such as "you" or "step" are no evidence of copying). It is asymmetric on
    purpose: a user turn that repeats one paragraph of a long answer has copied it, though the two
    texts differ in length. *Ratio* is difflib's matching-blocks ratio over the first 400 word
    tokens of each text; it catches light paraphrases that break many 3-grams (a restated question
    with a few words changed), is bounded in cost by the token cap, and, being symmetric, prefers
    the earlier turn that matches the whole user turn, which breaks ties between several turns that
    contain it. Both are cheap (no model), deterministic and need no tuning per dataset.
    """
    a, b = _tokens(turn), _tokens(earlier)
    if not a or not b:
        return 0.0, 0.0
    n = 3 if len(a) >= 6 else 2 if len(a) >= 3 else 0
    containment = 0.0
    if n:
        grams = _grams(a, n)
        containment = len(grams & _grams(b, n)) / len(grams)
    ratio = difflib.SequenceMatcher(None, a[:_RATIO_TOKENS], b[:_RATIO_TOKENS], autojunk=False).ratio()
    return max(containment, ratio), ratio


def _excerpt(text: str) -> str:
    return _NOT_XML.sub("", " ".join(text.split()))[:EXCERPT_CHARS]


def _spoken(m: dict) -> bool:
    """Whether a message dict is a turn of the conversation proper (`Message.spoken`): what a user turn can copy."""
    return m["role"] in SPOKEN_ROLES and not m.get(TOOL_CALLS_COLUMN)


def message_dict(m: Message) -> dict:
    """A message as the dict `episode_graph` reads: turn_index, role, speaker, content, and its tool traffic
    (`tool_calls_json`, its calls in wire form or None, as the store keeps them; `tools`, the names it calls or the
    tool it answers; `tool_error`, whether that tool failed)."""
    calls = ", ".join(c.name for c in m.tool_calls)
    result = m.tool_result
    return {"turn_index": m.turn_index, "role": m.role, "speaker": m.speaker, "content": m.content,
            TOOL_CALLS_COLUMN: json.dumps([c.as_chat() for c in m.tool_calls]) if m.tool_calls else None,
            "tools": calls or (result.name if result else ""),
            "tool_error": bool(result and result.error)}


def episode_graph(messages: list[dict], labels: dict[int, str], threshold: float = SOURCE_THRESHOLD) -> nx.DiGraph:
    """One episode as a graph: a node per turn, *reply* edges in time, *source* edges to copied turns.

    `messages` are dicts with turn_index, role, speaker and content, in order, and optionally the
    tool keys of `message_dict`; `labels` maps the turn index of a generated user turn to its scored
    label. Node attributes: role, speaker, label ("" when unlabelled or not a generated user turn),
    excerpt (first 80 characters on one line), words, ordinal (k of a generated user turn, else 0),
    drift (a drift label), onset (the first drift turn), tools (the tools a message calls or a tool
    message answers, "" for none) and tool_error. Each generated user turn gets at most one source
    edge, to the earlier spoken turn (no system prompt, tool call or tool result) it copies most
    (see `similarity`), when that reaches `threshold`: kind "restates" for a user turn (usually the
    opening request), "echoes" for an assistant turn (identity drift). Ties go to the turn the user
    turn matches more as a whole, then to the earliest (where the text first appeared). Reply edges
    have kind "reply" and weight 1.0; tool traffic is on the reply path like any message, never a user turn.
    """
    drift_labels = taxonomy().drift_labels
    generated = [int(m["turn_index"]) for m in generated_user_turns(messages)]
    ordinal = {t: k for k, t in enumerate(generated, 1)}
    graph = nx.DiGraph(kind="episode")
    onset_seen = False
    for m in messages:
        t = int(m["turn_index"])
        label = labels.get(t, "") if t in ordinal else ""
        drift = label in drift_labels
        graph.add_node(t, role=m["role"], speaker=m["speaker"], label=label or "", excerpt=_excerpt(m["content"]),
                       words=len(m["content"].split()), ordinal=ordinal.get(t, 0), drift=drift,
                       onset=drift and not onset_seen, tools=_excerpt(m.get("tools") or ""), tool_error=bool(m.get("tool_error")))
        onset_seen = onset_seen or drift
    order = [int(m["turn_index"]) for m in messages]
    for a, b in zip(order, order[1:]):
        graph.add_edge(a, b, kind="reply", weight=1.0)
    texts = {int(m["turn_index"]): m["content"] for m in messages}
    for t in generated:
        best: tuple[float, float, int] | None = None
        for m in messages:
            s = int(m["turn_index"])
            if s >= t or not _spoken(m):
                continue
            score, ratio = similarity(texts[t], m["content"])
            if best is None or (score, ratio, -s) > (best[0], best[1], -best[2]):
                best = (score, ratio, s)
        if best is not None and best[0] >= threshold:
            kind = "restates" if is_user(graph.nodes[best[2]]) else "echoes"
            graph.add_edge(t, best[2], kind=kind, weight=round(min(1.0, best[0]), 4))
    return graph


def label_transition_graph(per_episode_labels: list[list[str]]) -> nx.DiGraph:
    """How labels follow one another across consecutive generated user turns, pooled over episodes.

    Nodes are labels plus START, each with `count` (turns with that label; for START, episodes
    with at least one label). An edge a → b counts how often a turn labelled b follows one
    labelled a (START → first label of each episode); its `weight` is that count's share of all
    transitions out of a, so the out-edges of a node sum to 1 — a Markov chain of the user's
    behaviour: does it drift and stay drifted, or recover?
    """
    graph = nx.DiGraph(kind="transitions")
    sequences = [s for s in per_episode_labels if s]
    if sequences:
        graph.add_node(START, count=len(sequences))
    for seq in sequences:
        for label in seq:
            graph.add_node(label, count=graph.nodes[label]["count"] + 1 if label in graph else 1)
        for a, b in zip([START, *seq], seq):
            count = graph.edges[a, b]["count"] + 1 if graph.has_edge(a, b) else 1
            graph.add_edge(a, b, count=count, weight=0.0)
    for node in graph:
        total = sum(d["count"] for _, _, d in graph.out_edges(node, data=True))
        for _, _, d in graph.out_edges(node, data=True):
            d["weight"] = d["count"] / total
    return graph


def _check_attributes(where: str, data: dict) -> None:
    for key, value in data.items():
        if not isinstance(value, _SCALARS):
            raise TypeError(f"GraphML attribute {key!r} of {where} is {type(value).__name__}; use str, int, float or bool")


def write_graphml(graph: nx.DiGraph, path: Path | str) -> Path:
    """Write GraphML that reads back unchanged: only str, int, float and bool values are accepted
    (None and lists would be dropped or stringified by networkx), so a bad attribute fails here."""
    _check_attributes("the graph", graph.graph)
    for node, data in graph.nodes(data=True):
        _check_attributes(f"node {node!r}", data)
    for a, b, data in graph.edges(data=True):
        _check_attributes(f"edge {a!r}->{b!r}", data)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nx.write_graphml(graph, path)
    return path


def read_graphml(path: Path | str) -> nx.DiGraph:
    """Read a graph written by `write_graphml`; an episode graph's node ids become ints again
    (GraphML stores every id as a string), and networkx's empty `node_default`/`edge_default`
    graph attributes are dropped so that the graph can be written again unchanged."""
    graph = nx.read_graphml(path)
    for key in ("node_default", "edge_default"):
        if not graph.graph.get(key):
            graph.graph.pop(key, None)
    if graph.graph.get("kind") == "episode":
        graph = nx.relabel_nodes(graph, {n: int(n) for n in graph})
    return graph


def episode_messages(store: Store, run_id: str, episode_id: str) -> list[dict]:
    """An episode's messages as the dicts `episode_graph` reads (and GraphML tools keep), in turn order."""
    return [message_dict(m) for m in store.messages(run_id, episode_id)]


def label_sequences(labels: pd.DataFrame, turns: pd.DataFrame, unscored: str = "unscored") -> list[list[str]]:
    """Each episode's generated user turns as a label sequence, in turn order, for the transition
    graph; a turn without a scored label appears as `unscored`, so the sequence keeps its shape."""
    frame = turns.merge(labels[["episode_id", "turn_index", "status", "label"]], on=["episode_id", "turn_index"], how="left")
    frame = frame.sort_values(["episode_id", "turn_index"])
    known = (frame.status == "scored") & frame.label.notna()
    frame["name"] = frame.label.where(known, unscored)
    return [list(g["name"]) for _, g in frame.groupby("episode_id", sort=True)]
