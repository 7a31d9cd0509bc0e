"""The simulator-fault gold set: export model-written τ² episodes, build annotators' batches, measure their agreement,
settle the labels, and score the fault detectors on them.

    .venv/bin/python benchmarks/fault_gold.py export STORE [STORE ...] --out judges/faults-gold/episodes.jsonl
    .venv/bin/python benchmarks/fault_gold.py batches judges/faults-gold/episodes.jsonl --out DIR [--per-batch 10]
    .venv/bin/python benchmarks/fault_gold.py agree A.jsonl B.jsonl [--disputed DIR/disputed.jsonl]
    .venv/bin/python benchmarks/fault_gold.py settle A.jsonl B.jsonl C.jsonl --out judges/faults-gold/labels.jsonl
    .venv/bin/python benchmarks/fault_gold.py score [--split heldout] [--json OUT]

`export` keeps no τ² text (testbed/scenarios/tau2/fault_gold.py); `batches` writes, outside the repository, what an
annotator reads: each episode's user instructions and τ²'s user guidelines (from the installed package), the whole
conversation with tool results replayed, and the user turns to label (judges/faults-gold/GUIDE.md says how). Labels
are one JSON object per turn, `{"id": "<episode id>#<turn>", "tags": [...], "severity": ... | null}`.

`agree` gives Cohen's κ of two annotators on whether a turn has an error, on each tag, and on severity where both
found one; `settle` takes the two labels where they agree and the third annotator's where they do not. `score` runs
the rules (testbed.scenarios.tau2.user_faults, counted under τ²'s tags by fault_tags.RULE_TAGS) over the gold
episodes and gives, per tag and for any error, precision, recall and F1 against the settled labels with Wilson 95 %
intervals, on the split asked for (`dev`: the part that may be looked at while rules and prompts are tuned;
`heldout`: the part kept out of every choice).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from testbed.analysis.stats import wilson_interval  # noqa: E402
from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.fault_gold import load_episode, user_turns  # noqa: E402
from testbed.scenarios.tau2.trajectory import SCRIPTED  # noqa: E402
from testbed.scenarios.tau2.fault_tags import RULE_TAGS, SEVERITIES, USER_ERROR_TAGS  # noqa: E402

GOLD = REPO / "judges" / "faults-gold"
EPISODES = GOLD / "episodes.jsonl"
LABELS = GOLD / "labels.jsonl"


def read_jsonl(path: Path) -> list[dict]:
    """The JSON objects of a file, one per non-empty line."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    """One JSON object per line."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def export(stores: list[str], out: Path) -> None:
    """Every finished τ² episode with a user turn, from the stores' runs, as gold records."""
    from testbed.scenarios.tau2.fault_gold import export_episode
    from testbed.specs.tau2 import domain_of
    from testbed.store import Store
    from testbed.store.frames import episodes_df

    records = []
    for path in stores:
        store = Store(path)
        for run_id in (r["run_id"] for r in store.runs()):
            episodes = {e.episode_id: e for e in episodes_df(store, run_id, exact=True).itertuples(index=False)}
            for eid, messages in store.iter_messages(run_id, include_errored=True):
                e = episodes[eid]
                name = domain_of(e.dataset)
                if name is not None and user_turns(messages):
                    records.append(export_episode(e, name, messages))
    write_jsonl(out, records)
    turns = sum(len(user_turns(load_episode(r).messages)) for r in records)
    split = Counter(r["split"] for r in records)
    print(f"{len(records)} episodes, {turns} user turns ({dict(split)}) -> {out}")


def conversation(episode) -> str:
    """The episode's messages as the annotator and the reviewer read them: numbered, tool traffic named."""
    from testbed.control_tokens import ControlTokens
    from testbed.judges.fault_review import conversation_text

    return conversation_text(episode.messages, ControlTokens(()))


def batches(episodes: Path, out: Path, per_batch: int) -> None:
    """Annotators' batches: markdown to read, and the ids to label, `per_batch` episodes each."""
    out.mkdir(parents=True, exist_ok=True)
    records = read_jsonl(episodes)
    for start in range(0, len(records), per_batch):
        parts, ids = [], []
        for record in records[start:start + per_batch]:
            ep = load_episode(record)
            turns = [m.turn_index for m in user_turns(ep.messages)]
            ids += [f"{ep.id}#{t}" for t in turns]
            from tau2.user.user_simulator import get_global_user_sim_guidelines  # after τ²'s registry is loaded quietly

            tools = bool(domain(ep.domain).user_tools)
            parts.append(f"# Episode {ep.id}\n\nDomain {ep.domain}; the episode ended by `{ep.termination}`.\n\n"
                         f"## Instructions\n\n{ep.task.user_scenario}\n\n"
                         f"## Guidelines\n\n{get_global_user_sim_guidelines(use_tools=tools)}\n\n"
                         f"## Conversation\n\n```\n{conversation(ep)}\n```\n\n"
                         f"## Turns to label\n\n" + "\n".join(f"- `{ep.id}#{t}`" for t in turns) + "\n")
        name = f"batch-{start // per_batch + 1:02d}"
        (out / f"{name}.md").write_text("\n\n---\n\n".join(parts))
        (out / f"{name}.ids").write_text("\n".join(ids) + "\n")
    print(f"{len(records)} episodes in {(len(records) + per_batch - 1) // per_batch} batches -> {out}")


def _labels(path: Path) -> dict[str, dict]:
    """An annotator's labels by turn id, checked against the taxonomy."""
    out = {}
    for row in read_jsonl(path):
        tags, severity = row.get("tags") or [], row.get("severity")
        bad = [t for t in tags if t not in USER_ERROR_TAGS]
        if bad or (tags and severity not in SEVERITIES) or (not tags and severity is not None):
            raise SystemExit(f"{path}: {row['id']}: tags {tags} with severity {severity!r} is not a valid label")
        out[row["id"]] = {"tags": sorted(set(tags)), "severity": severity}
    return out


def _kappa(a: list, b: list) -> float:
    from sklearn.metrics import cohen_kappa_score

    return float(cohen_kappa_score(a, b)) if len(set(a) | set(b)) > 1 else float("nan")


def agreement(a: dict[str, dict], b: dict[str, dict]) -> dict:
    """Cohen's κ and raw agreement of two annotators on the turns both labelled."""
    ids = sorted(set(a) & set(b))
    err_a, err_b = [bool(a[i]["tags"]) for i in ids], [bool(b[i]["tags"]) for i in ids]
    out = {"turns": len(ids), "error_kappa": _kappa(err_a, err_b),
           "error_agreement": sum(x == y for x, y in zip(err_a, err_b)) / max(len(ids), 1),
           "errors_a": sum(err_a), "errors_b": sum(err_b)}
    for tag in USER_ERROR_TAGS:
        ta, tb = [tag in a[i]["tags"] for i in ids], [tag in b[i]["tags"] for i in ids]
        if any(ta) or any(tb):
            out[f"kappa_{tag}"] = _kappa(ta, tb)
            out[f"n_{tag}"] = (sum(ta), sum(tb))
    both = [i for i in ids if a[i]["tags"] and b[i]["tags"]]
    out["severity_kappa"] = _kappa([a[i]["severity"] for i in both], [b[i]["severity"] for i in both])
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
              if m["role"] == "user" and m["speaker"] != SCRIPTED and not m.get("tool_calls")}
    rows = []
    for i in sorted(set(a) & set(b) & wanted, key=lambda x: (x.split("#")[0], int(x.split("#")[1]))):
        agreed = a[i] == b[i]
        if not agreed and i not in c:
            raise SystemExit(f"{i}: the annotators disagree and the third label is missing")
        final = a[i] if agreed else c[i]
        rows.append({"id": i, "split": split[i.split("#")[0]], "tags": final["tags"], "severity": final["severity"],
                     "a": a[i], "b": b[i], "settled_by": "agreement" if agreed else "third"})
    return rows


def drift_labels(messages, judge) -> dict[int, str]:
    """The judge's label of each generated user turn of one episode (what role drift is read from), as `testbed
    judge` would give it: each turn with the episode's request and the latest spoken assistant message."""
    from testbed.judges.verdict import JudgeInput
    from testbed.store.reader import episode_turns
    from testbed.transcript import TOOL_CALLS_COLUMN

    rows = [{"role": m.role, "turn_index": m.turn_index, "content": m.content, "speaker": m.speaker,
             TOOL_CALLS_COLUMN: bool(m.tool_calls)} for m in messages if m.role != "system"]
    turns = episode_turns("gold", rows)
    items = [JudgeInput(str(t.turn_index), t.question, t.answer, t.user_turn) for t in turns]
    verdicts = asyncio.run(judge.judge_all(items))
    return {t.turn_index: v.label for t, (v, _) in zip(turns, verdicts) if v.label is not None}


def rule_tags_by_turn(record: dict, judge=None) -> dict[int, set[str]]:
    """The τ² tags the rules give each user turn of a gold episode; role drift from `judge`'s labels when one is given
    (the default stack: the fast judge), else none."""
    from testbed.scenarios.tau2.user_faults import detect_faults

    ep = load_episode(record)
    drift = drift_labels(ep.messages, judge) if judge is not None else None
    out: dict[int, set[str]] = {m.turn_index: set() for m in user_turns(ep.messages)}
    for f in detect_faults(ep.task, ep.messages, ep.termination, drift):
        out.setdefault(f.turn_index, set()).add(RULE_TAGS[f.kind])
    return out


def prf(hits: int, flagged: int, truth: int) -> dict:
    """Precision and recall with Wilson 95 % intervals, and F1."""
    p, r = (hits / flagged if flagged else float("nan")), (hits / truth if truth else float("nan"))
    f1 = 2 * p * r / (p + r) if flagged and truth and (p + r) else float("nan")
    return {"tp": hits, "flagged": flagged, "true": truth, "precision": p, "precision_ci": wilson_interval(hits, flagged),
            "recall": r, "recall_ci": wilson_interval(hits, truth), "f1": f1}


def score(split: str, judge_name: str | None = "learned") -> dict:
    """The rules against the settled labels on one split: per tag and for any error, at the turn level; role drift
    from the named judge (None: no drift)."""
    from testbed.judges.base import make_judge
    from testbed.judges.specs import load_judge

    judge = make_judge(load_judge(judge_name)) if judge_name else None
    labels = {r["id"]: r for r in read_jsonl(LABELS) if split == "all" or r["split"] == split}
    records = [r for r in read_jsonl(EPISODES) if split == "all" or r["split"] == split]
    predicted: dict[str, set[str]] = {}
    for record in records:
        for turn, tags in rule_tags_by_turn(record, judge).items():
            predicted[f"{record['id']}#{turn}"] = tags
    ids = [i for i in labels if i in predicted]
    out = {"split": split, "drift_judge": str(judge.identity) if judge else None, "turns": len(ids), "episodes": len({i.split('#')[0] for i in ids})}
    for tag in ("any", *USER_ERROR_TAGS):
        def has(tags: set[str]) -> bool:
            return bool(tags) if tag == "any" else tag in tags
        truth = [has(set(labels[i]["tags"])) for i in ids]
        flags = [has(predicted[i]) for i in ids]
        out[tag] = prf(sum(t and f for t, f in zip(truth, flags)), sum(flags), sum(truth))
    return out


def main() -> None:
    """The subcommands of the module docstring."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("export")
    p.add_argument("stores", nargs="+")
    p.add_argument("--out", type=Path, default=EPISODES)
    p = sub.add_parser("batches")
    p.add_argument("episodes", type=Path, nargs="?", default=EPISODES)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--per-batch", type=int, default=10)
    p = sub.add_parser("agree")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("--disputed", type=Path)
    p = sub.add_parser("settle")
    p.add_argument("a", type=Path)
    p.add_argument("b", type=Path)
    p.add_argument("c", type=Path)
    p.add_argument("--out", type=Path, default=LABELS)
    p = sub.add_parser("score")
    p.add_argument("--split", choices=["dev", "heldout", "all"], default="dev")
    p.add_argument("--json", type=Path)
    p.add_argument("--judge", default="learned", help="whose labels give role drift (none: no drift)")
    args = parser.parse_args()
    if args.command == "export":
        export(args.stores, args.out)
    elif args.command == "batches":
        batches(args.episodes, args.out, args.per_batch)
    elif args.command == "agree":
        a, b = _labels(args.a), _labels(args.b)
        print(json.dumps(agreement(a, b), indent=1))
        if args.disputed:
            args.disputed.write_text("\n".join(disputed(a, b)) + "\n")
            print(f"{len(disputed(a, b))} disputed turns -> {args.disputed}")
    elif args.command == "settle":
        rows = settle(_labels(args.a), _labels(args.b), _labels(args.c), EPISODES)
        write_jsonl(args.out, rows)
        print(f"{len(rows)} settled labels ({sum(r['settled_by'] == 'third' for r in rows)} by the third) -> {args.out}")
    else:
        result = score(args.split, None if args.judge == "none" else args.judge)
        print(f"rules on the gold set's {args.split} split: {result['turns']} user turns, {result['episodes']} episodes; "
              f"role drift from {result['drift_judge']}\n")
        print("| tag | true | flagged | precision (95 % CI) | recall (95 % CI) | F1 |\n|---|---|---|---|---|---|")
        for tag in ("any", *USER_ERROR_TAGS):
            m = result[tag]
            if m["true"] or m["flagged"]:
                print(f"| {tag} | {m['true']} | {m['flagged']} | {m['precision']:.2f} ({m['precision_ci'][0]:.2f}–"
                      f"{m['precision_ci'][1]:.2f}) | {m['recall']:.2f} ({m['recall_ci'][0]:.2f}–{m['recall_ci'][1]:.2f})"
                      f" | {m['f1']:.2f} |")
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
