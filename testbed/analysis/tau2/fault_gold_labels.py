"""The simulator-fault gold set's labels: reading and checking them, two annotators' agreement, settling their
disagreements with a third, and a detector's predictions scored against the settled labels.

A label is `{"id": "<episode id>#<turn>", "tags": [...], "severity": ... | null}` with tags from τ²'s user-error
taxonomy (testbed.scenarios.tau2.fault_tags) and one severity exactly when there is a tag; judges/faults-gold/GUIDE.md
says how annotators decide them. `benchmarks/fault_gold.py` is the command line over this module.
"""

from __future__ import annotations

import json
from pathlib import Path

from testbed.analysis.stats import wilson_interval
from testbed.scenarios.tau2.fault_tags import SEVERITIES, USER_ERROR_TAGS
from testbed.scenarios.tau2.trajectory import SCRIPTED
from testbed.transcript import is_user


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a file, one per non-empty line."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    """One JSON object per line."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def read_labels(path: Path) -> dict[str, dict]:
    """An annotator's labels by turn id, checked against the taxonomy."""
    out = {}
    for row in read_jsonl(path):
        tags, severity = row.get("tags") or [], row.get("severity")
        bad = [t for t in tags if t not in USER_ERROR_TAGS]
        if bad or (tags and severity not in SEVERITIES) or (not tags and severity is not None):
            raise ValueError(f"{path}: {row['id']}: tags {tags} with severity {severity!r} is not a valid label")
        out[row["id"]] = {"tags": sorted(set(tags)), "severity": severity}
    return out


def kappa(a: list, b: list) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b)) if len(set(a) | set(b)) > 1 else float("nan")


def agreement(a: dict[str, dict], b: dict[str, dict]) -> dict:
    """Cohen's κ and raw agreement of two annotators on the turns both labelled."""
    ids = sorted(set(a) & set(b))
    err_a, err_b = [bool(a[i]["tags"]) for i in ids], [bool(b[i]["tags"]) for i in ids]
    out = {"turns": len(ids), "error_kappa": kappa(err_a, err_b),
           "error_agreement": sum(x == y for x, y in zip(err_a, err_b)) / max(len(ids), 1),
           "errors_a": sum(err_a), "errors_b": sum(err_b)}
    for tag in USER_ERROR_TAGS:
        ta, tb = [tag in a[i]["tags"] for i in ids], [tag in b[i]["tags"] for i in ids]
        if any(ta) or any(tb):
            out[f"kappa_{tag}"] = kappa(ta, tb)
            out[f"n_{tag}"] = (sum(ta), sum(tb))
    both = [i for i in ids if a[i]["tags"] and b[i]["tags"]]
    out["severity_kappa"] = kappa([a[i]["severity"] for i in both], [b[i]["severity"] for i in both])
    out["severity_turns"] = len(both)
    return out


def disputed(a: dict[str, dict], b: dict[str, dict]) -> list[str]:
    """The turns two annotators labelled differently (tags or severity)."""
    return [i for i in sorted(set(a) & set(b)) if a[i] != b[i]]


def settle(a: dict, b: dict, c: dict, episodes: Path) -> list[dict]:
    """The final label of every turn: the two annotators' where they agree, the third's where they do not."""
    records = read_jsonl(episodes)
    split = {r["id"]: r["split"] for r in records}
    wanted = {f"{r['id']}#{m['turn']}" for r in records for m in r.get("messages", ())
              if is_user(m) and m["speaker"] != SCRIPTED and not m.get("tool_calls")}
    rows = []
    for i in sorted(set(a) & set(b) & wanted, key=lambda x: (x.split("#")[0], int(x.split("#")[1]))):
        agreed = a[i] == b[i]
        if not agreed and i not in c:
            raise ValueError(f"{i}: the annotators disagree and the third label is missing")
        final = a[i] if agreed else c[i]
        rows.append({"id": i, "split": split[i.split("#")[0]], "tags": final["tags"], "severity": final["severity"],
                     "a": a[i], "b": b[i], "settled_by": "agreement" if agreed else "third"})
    return rows


def prf(hits: int, flagged: int, truth: int) -> dict:
    """Precision and recall with Wilson 95 % intervals, and F1."""
    p, r = (hits / flagged if flagged else float("nan")), (hits / truth if truth else float("nan"))
    f1 = 2 * p * r / (p + r) if flagged and truth and (p + r) else float("nan")
    return {"tp": hits, "flagged": flagged, "true": truth, "precision": p, "precision_ci": wilson_interval(hits, flagged),
            "recall": r, "recall_ci": wilson_interval(hits, truth), "f1": f1}


def episode_counts(labels: dict[str, dict], predicted: dict[str, dict], ids: list[str], severity: str | None) -> dict:
    """Episode-level confusion counts of "the episode has an error" (of `severity` when given), over `ids`' episodes:
    what a detector's measured error for an episode share is made of (testbed.analysis.judge_quality.correction)."""
    def has(rows: list[dict]) -> bool:
        return any(r["tags"] and (severity is None or r["severity"] == severity) for r in rows)

    by_episode: dict[str, list[str]] = {}
    for i in ids:
        by_episode.setdefault(i.split("#")[0], []).append(i)
    pairs = [(has([labels[i] for i in turns]), has([predicted[i] for i in turns])) for turns in by_episode.values()]
    return {"true_positives": sum(t and p for t, p in pairs), "false_negatives": sum(t and not p for t, p in pairs),
            "true_negatives": sum(not t and not p for t, p in pairs), "false_positives": sum(p and not t for t, p in pairs)}


def score(labels_path: Path, split: str, predicted: dict[str, dict], detector: str) -> dict:
    """A detector's predictions against the settled labels (`labels_path`) on one split: per τ² tag and for any error at the turn
    level (precision, recall, F1), and at the episode level the counts of any error, of a critical_hindered and of a
    critical_helped one (a detector without severities, the rules, gets only the first)."""
    labels = {r["id"]: r for r in read_jsonl(labels_path) if split == "all" or r["split"] == split}
    ids = [i for i in labels if i in predicted]
    out = {"split": split, "detector": detector, "turns": len(ids), "labelled_turns": len(labels),
           "episodes": len({i.split('#')[0] for i in ids})}
    for tag in ("any", *USER_ERROR_TAGS):
        def has(tags) -> bool:
            return bool(tags) if tag == "any" else tag in tags
        truth = [has(labels[i]["tags"]) for i in ids]
        flags = [has(predicted[i]["tags"]) for i in ids]
        out[tag] = prf(sum(t and f for t, f in zip(truth, flags)), sum(flags), sum(truth))
    out["episodes_any"] = episode_counts(labels, predicted, ids, None)
    if any(p["severity"] for p in predicted.values()):
        for severity in ("critical_hindered", "critical_helped"):
            out[f"episodes_{severity}"] = episode_counts(labels, predicted, ids, severity)
    return out


