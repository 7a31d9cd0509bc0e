"""A labelled set of simulated-user turns made with the testbed: items for annotators, and their merged labels.

Items are the generated user turns of finished episodes, each with what an annotator needs (the
request, the conversation before the turn, the answer as shown, the turn) and its conditions;
they never carry a judge's output. Two annotators label every item independently; items they
disagree on go to a third, whose label settles them. The merged set keeps both independent
labels beside the final one, as the gold set does.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from pathlib import Path

from testbed.analysis.judge_quality.agreement import cohen_kappa
from testbed.judges.taxonomy import taxonomy
from testbed.scenarios.base import hashed_share, stable_hash
from testbed.scenarios.human_reference import HUMAN_MODE
from testbed.store import Store
from testbed.store.frames import turns_df
from testbed.specs.registries import kind_views

CONDITION_FIELDS = ("source_model", "dataset", "kind", "mode", "temperature", "perturbation", "turn")
"""What each item says about how its turn was made (the gold set's fields, plus kind and turn ordinal)."""
SHOWN = ("id", "kind", "perturbation", "turn", "question", "context", "assistant", "user_turn")
"""What an annotator sees of an item: the texts, and what the guide needs (the answer may be perturbed; later turns)."""


HELD_OUT_SHARE = 0.25
"""The share of conversations `split_of` keeps out of every choice until the final score (issue 40's later turns)."""
SPLIT_SALT = "judge-later-turns-2"
"""Salts the split hash, so this split is independent of every other split made from the same conversation keys."""


def split_of(conversation: str) -> str:
    """`heldout` or `train`: a fixed hash of the conversation's key, so every turn of a conversation falls on one side
    and the split never depends on a label (fixed before any label existed)."""
    return "heldout" if hashed_share(f"{SPLIT_SALT}:{conversation}") < HELD_OUT_SHARE else "train"


def item_of(turn, *, item_id: str, conversation: str, conditions: Mapping[str, object], ordinal: int) -> dict:
    """One annotation item of a stored turn (`TurnRecord`): what an annotator reads, how it was made, its split."""
    return {"id": item_id, **conditions, "turn": ordinal, "conversation": conversation, "split": split_of(conversation),
            "question": turn.question, "context": [e.as_dict() for e in turn.context], "assistant": turn.answer,
            "user_turn": turn.user_turn}


def annotation_items(store: Store, run_ids: Iterable[str], exclude_questions: set[str] = frozenset()) -> list[dict]:
    """One item per generated user turn of the runs' finished episodes, in a stable order.

    Turns whose request is in `exclude_questions` (an evaluation set's questions) are left out,
    so nothing learned from these items has seen those questions; so are real people's turns stored as a human
    reference (`HUMAN_MODE`): they are no simulated user's, and their words may not be committed. A kind whose views
    give `annotation_turns` decides which of its turns are items and what of them an annotator sees (τ²'s: not the
    customer's opening, and no scripted history).
    """
    items = []
    for run_id in run_ids:
        kind = store.run(run_id).kind
        shaping = kind_views(kind).annotation_turns
        turns = turns_df(store, run_id)
        turns = turns[turns.status == "done"]
        stored = {(t.episode_id, t.turn_index): t for t in store.iter_turns(run_id)}
        if shaping is not None:
            shown = shaping(store, run_id)
            stored = {key: shown(turn) for key, turn in stored.items()}
            turns = turns[[stored.get((e, int(i))) is not None for e, i in zip(turns.episode_id, turns.turn_index)]]
        ordinal = dict(zip(zip(turns.episode_id, turns.turn_index), turns.groupby("episode_id").cumcount() + 1))
        for t in turns.itertuples():
            if t.question.strip() in exclude_questions or t.user_mode == HUMAN_MODE:
                continue
            conditions = {"source_model": t.user_model, "dataset": t.dataset, "item_id": t.item_id, "kind": kind, "mode": t.user_mode,
                          "temperature": float(t.temperature), "perturbation": t.perturbation}
            key = (t.episode_id, int(t.turn_index))
            items.append(item_of(stored[key], item_id=stable_hash(run_id, t.episode_id, int(t.turn_index), length=12),
                                 conversation=f"{run_id}/{t.episode_id}", conditions=conditions, ordinal=int(ordinal[key])))
    return items


def write_batches(items: list[dict], folder: Path, size: int, *, seed: int = 0) -> list[Path]:
    """The items shuffled (seeded, so conditions mix in every batch) into JSONL files of `size` items, showing `SHOWN` only."""
    folder.mkdir(parents=True, exist_ok=True)
    order = list(items)
    random.Random(seed).shuffle(order)
    paths = []
    for k in range(0, len(order), size):
        path = folder / f"{folder.name}-{k // size + 1:02d}.jsonl"
        shown = [{f: i[f] for f in SHOWN} for i in order[k:k + size]]
        path.write_text("".join(json.dumps(i, ensure_ascii=False) + "\n" for i in shown), encoding="utf-8")
        paths.append(path)
    return paths


def read_labels(paths: Iterable[Path]) -> dict[str, str]:
    """An annotator's labels by item id, from JSONL lines `{"id", "label", "note"}`; unknown labels are refused."""
    known = set(taxonomy().labels)
    out: dict[str, str] = {}
    for path in paths:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["label"] not in known:
                raise ValueError(f"{path}:{n}: unknown label {row['label']!r}; use one of {', '.join(sorted(known))}")
            out[row["id"]] = row["label"]
    return out


def disagreements(items: list[dict], a: Mapping[str, str], b: Mapping[str, str]) -> list[dict]:
    """The items the two annotators labelled differently, without either label (the adjudicator decides afresh)."""
    return [i for i in items if a.get(i["id"]) != b.get(i["id"])]


def merge(items: list[dict], a: Mapping[str, str], b: Mapping[str, str], third: Mapping[str, str]) -> list[dict]:
    """The labelled set: agreed labels, or the third annotator's where the two disagreed; every item must be labelled."""
    followup = taxonomy().followup_label
    out = []
    for item in items:
        la, lb = a[item["id"]], b[item["id"]]
        label = la if la == lb else third[item["id"]]
        out.append({**item, "label": label, "followup": label == followup, "annotators": [la, lb], "adjudicated": la != lb})
    return out


def agreement(items: list[dict], a: Mapping[str, str], b: Mapping[str, str]) -> dict[str, float]:
    """Cohen's κ of the two independent passes: 8-way and on the binary follow-up decision."""
    followup = taxonomy().followup_label
    la = [a[i["id"]] for i in items]
    lb = [b[i["id"]] for i in items]
    return {"items": len(items), "kappa": cohen_kappa(la, lb),
            "kappa_followup": cohen_kappa([x == followup for x in la], [x == followup for x in lb]),
            "raw_agreement": sum(x == y for x, y in zip(la, lb)) / len(items) if items else float("nan")}
