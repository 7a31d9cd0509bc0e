"""Build the learned judge's labelled set: export items for annotators, find disagreements, merge.

    python scripts/labelset.py export --store S --out DIR [--runs PREFIX,..] [--name items] [--batch 150] [--split heldout]
    python scripts/labelset.py export-gold --episodes judges/faults-gold/episodes.jsonl --out DIR [--batch 130]   # τ² gold episodes' later user turns
    python scripts/labelset.py disagreements --items DIR/items.jsonl [..] --a A_DIR --b B_DIR --out FILE
    python scripts/labelset.py merge --items DIR/items.jsonl [..] --a A_DIR --b B_DIR --third T_DIR --out judges/training/labels.jsonl \
        [--detach SPEC..] [--heldout-out FILE]   # rows over sharegpt written detached (the specs' items rebuild them); held-out rows apart

Items never carry a judge's output. Turns whose request is in the gold dev set are left out.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import yaml

from testbed.analysis.judge_quality.detached_text import detach_row, surviving_runs
from testbed.analysis.judge_quality.labelset import agreement, annotation_items, disagreements, merge, read_labels, write_batches
from testbed.store import Store

GOLD_DEV = Path(__file__).resolve().parents[1].parent / "shared" / "gold" / "dev.jsonl"


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def _detached(rows: list[dict], specs: list[Path], dataset: str = "sharegpt") -> list[dict]:
    """The rows with every row over `dataset` detached from its real opening (`detached_text.detach_row`); its
    `source` names the item selection of the spec whose run made it (the spec with the longest name its run id starts with)."""
    selections = {}
    for spec in specs:
        blob = yaml.safe_load(spec.read_text(encoding="utf-8"))
        selections[blob["name"]] = blob["items"]
    out = []
    for row in rows:
        if row.get("dataset") != dataset:
            out.append(row)
            continue
        run = row["conversation"].split("/")[0]
        names = sorted((n for n in selections if run.startswith(n)), key=len)
        if not names:
            raise SystemExit(f"row {row['id']}: no --detach spec made run {run}; name the spec that made it")
        kept = detach_row(row, row["question"], dataset=dataset, item_id=row["item_id"])
        kept["source"]["selection"] = selections[names[-1]]
        texts = [kept["assistant"], kept["user_turn"], *(c["content"] for c in kept.get("context") or [])]
        if any(surviving_runs(t or "", row["question"]) for t in texts):
            raise SystemExit(f"row {row['id']}: real text survived detaching; not written")
        out.append(kept)
    return out


def main() -> None:
    """The three steps, as subcommands."""
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    e = sub.add_parser("export")
    e.add_argument("--store", type=Path, required=True)
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--batch", type=int, default=150)
    e.add_argument("--runs", help="comma-separated run id prefixes, finished or not (default: every finished run)")
    e.add_argument("--name", default="items", help="name of this export (several exports can share a folder)")
    e.add_argument("--gold", type=Path, default=GOLD_DEV, help="questions to leave out (the gold dev set)")
    e.add_argument("--split", choices=("heldout",), help="put every item in this split instead of the hashed one (a fresh "
                                                          "held-out set, generated after the first was spent)")
    g = sub.add_parser("export-gold")
    g.add_argument("--episodes", type=Path, required=True, help="a fault gold set's episodes.jsonl (no benchmark text inside)")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--batch", type=int, default=130)
    g.add_argument("--name", default="tau2")
    for name in ("disagreements", "merge"):
        p = sub.add_parser(name)
        p.add_argument("--items", type=Path, nargs="+", required=True, help="the exports' item files")
        p.add_argument("--a", type=Path, required=True, help="folder of annotator A's label files")
        p.add_argument("--b", type=Path, required=True, help="folder of annotator B's label files")
        p.add_argument("--out", type=Path, required=True)
        if name == "merge":
            p.add_argument("--third", type=Path, required=True, help="folder of the adjudicator's label files")
            p.add_argument("--heldout-out", type=Path, help="write rows of the held-out split (`split: heldout`) here, apart from --out")
            p.add_argument("--detach", type=Path, nargs="+", help="the spec whose `items:` selection loaded the real conversations: their "
                                                         "rows are written without the real text, which is rebuilt from the package")
    args = parser.parse_args()
    if args.step == "export":
        gold = {row["question"].strip() for row in _jsonl(args.gold)} if args.gold.exists() else set()
        store = Store(args.store, readonly=True)
        if args.runs:
            # A run named here may still be generating: its finished episodes are final, so they can be labelled now.
            runs = [r["run_id"] for r in store.runs() if any(r["run_id"].startswith(p) for p in args.runs.split(","))]
        else:
            runs = [r["run_id"] for r in store.runs() if r["status"] == "done"]
        items = [i | ({"split": args.split} if args.split else {}) for i in annotation_items(store, runs, gold)]
        _write(args.out / f"{args.name}.jsonl", items)
        batches = write_batches(items, args.out / "batches" / args.name, args.batch)
        print(f"{len(items)} items from {len(runs)} runs ({', '.join(runs)}) in {len(batches)} batches under {args.out}")
        return
    if args.step == "export-gold":
        from testbed.analysis.tau2.judge_items import gold_turn_items

        items = gold_turn_items(args.episodes)
        _write(args.out / f"{args.name}.jsonl", items)
        batches = write_batches(items, args.out / args.name, args.batch, seed=40)
        print(f"{len(items)} items from {args.episodes} in {len(batches)} batches under {args.out}")
        return
    items = [row for path in args.items for row in _jsonl(path)]
    a, b = read_labels(sorted(args.a.glob("*.jsonl"))), read_labels(sorted(args.b.glob("*.jsonl")))
    missing = [i["id"] for i in items if i["id"] not in a or i["id"] not in b]
    if missing:
        raise SystemExit(f"{len(missing)} items lack a label from A or B (first: {missing[0]})")
    print(json.dumps(agreement(items, a, b)))
    if args.step == "disagreements":
        _write(args.out, disagreements(items, a, b))
        print(f"{len(disagreements(items, a, b))} items to adjudicate in {args.out}")
        return
    merged = merge(items, a, b, read_labels(sorted(args.third.glob("*.jsonl"))))
    if args.detach:
        merged = _detached(merged, args.detach)
    if args.heldout_out:
        _write(args.heldout_out, [r for r in merged if r.get("split") == "heldout"])
        print(f"{sum(r.get('split') == 'heldout' for r in merged)} held-out items in {args.heldout_out}")
        merged = [r for r in merged if r.get("split") != "heldout"]
    _write(args.out, merged)
    print(f"{len(merged)} labelled items in {args.out}")


if __name__ == "__main__":
    main()
