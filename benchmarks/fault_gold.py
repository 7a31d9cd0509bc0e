"""The simulator-fault gold set: export model-written τ² episodes, build annotators' batches, measure their agreement,
settle the labels, and score the fault detectors on them.

    .venv/bin/python benchmarks/fault_gold.py export STORE [STORE ...] --out judges/faults-gold/episodes.jsonl
    .venv/bin/python benchmarks/fault_gold.py batches judges/faults-gold/episodes.jsonl --out DIR [--per-batch 10]
    .venv/bin/python benchmarks/fault_gold.py agree A.jsonl B.jsonl [--disputed DIR/disputed.jsonl]
    .venv/bin/python benchmarks/fault_gold.py settle A.jsonl B.jsonl C.jsonl --out judges/faults-gold/labels.jsonl
    .venv/bin/python benchmarks/fault_gold.py score [--split heldout] [--json OUT]             # the rules
    .venv/bin/python benchmarks/fault_gold.py review agents/qwen2.5-coder-1.5b.yaml --split heldout --out R.jsonl
    .venv/bin/python benchmarks/fault_gold.py score --split heldout --reviews R.jsonl            # the reviewer
    .venv/bin/python benchmarks/fault_gold.py rates --reviews R.jsonl       # judges/faults-gold/error-rates.json

`export` keeps no τ² text (testbed/scenarios/tau2/fault_gold.py); `batches` writes, outside the repository, what an
annotator reads: each episode's user instructions and τ²'s user guidelines (from the installed package), the whole
conversation with tool results replayed, and the user turns to label (judges/faults-gold/GUIDE.md says how). Labels
are one JSON object per turn, `{"id": "<episode id>#<turn>", "tags": [...], "severity": ... | null}`.

`agree` gives Cohen's κ of two annotators on whether a turn has an error, on each tag, and on severity where both
found one; `settle` takes the two labels where they agree and the third annotator's where they do not. `score` runs
the rules (testbed.scenarios.tau2.user_faults, counted under τ²'s tags by fault_tags.RULE_TAGS) over the gold
episodes and gives, per tag and for any error, precision, recall and F1 against the settled labels with Wilson 95 %
intervals, on the split asked for (`dev`: the part that may be looked at while rules and prompts are tuned;
`heldout`: the part kept out of every choice). `review` asks a whole-conversation reviewer
(testbed.judges.conversation_review) about every gold episode of a split, shown what `testbed review-faults --whole`
shows it, and appends each episode's review to a file as it arrives (a rerun resumes); `score --reviews` scores those.
At the episode level `score` also gives the confusion counts of "has an error", "has a critical_hindered error" and
"has a critical_helped error": the detector's measured error that corrects an episode share.
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

from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.fault_gold import load_episode, user_turns  # noqa: E402
from testbed.analysis.tau2.fault_gold_labels import (agreement, disputed, read_jsonl, read_labels, score, settle,  # noqa: E402
                                                      write_jsonl)
from testbed.scenarios.tau2.fault_tags import RULE_TAGS, USER_ERROR_TAGS  # noqa: E402

GOLD = REPO / "judges" / "faults-gold"
EPISODES = GOLD / "episodes.jsonl"
LABELS = GOLD / "labels.jsonl"


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


def review_context(ep) -> tuple[str, str]:
    """What a whole-conversation reviewer is shown of a gold episode beside its messages: the user's instructions and
    the guidelines its run gave it (the generating sweeps' user prompt, scenarios/prompts/user-tau2.md)."""
    from types import SimpleNamespace

    from testbed.analysis.tau2.review_context import SCENARIO_SHOWN_APART
    from testbed.scenarios.tau2.prompts import user_prompt

    template = (REPO / "scenarios" / "prompts" / "user-tau2.md").read_text()
    guidelines = user_prompt(template, SimpleNamespace(user_scenario=SCENARIO_SHOWN_APART),
                             with_tools=bool(domain(ep.domain).user_tools))
    return str(ep.task.user_scenario), guidelines


async def _review_all(records: list[dict], spec: str, out: Path) -> None:
    """Review every gold episode not yet in `out` with the reviewer `spec`, appending one JSON line per episode as it
    arrives (a rerun resumes; an unscored review is kept, and asked again on the next run)."""
    from testbed.analysis.tau2.stored_faults import DETECTOR
    from testbed.backends.factory import BackendPool
    from testbed.judges.conversation_review import ConversationReviewer
    from testbed.judges.conversation_review_run import vocabulary_of
    from testbed.judges.fault_review import load_reviewer

    done = {r["id"] for r in read_jsonl(out) if r["scored"]} if out.exists() else set()
    todo = [r for r in records if r["id"] not in done]
    reviewer = load_reviewer(spec)
    print(f"{len(todo)} episodes to review ({len(done)} reviewed before) -> {out}", flush=True)
    async with BackendPool() as pool:
        asker = ConversationReviewer(reviewer, vocabulary_of(DETECTOR), await pool.backend_for(reviewer.agent.spec))
        gate = asyncio.Semaphore(reviewer.settings.concurrency)

        async def one(record: dict) -> None:
            ep = load_episode(record)
            instructions, guidelines = review_context(ep)
            async with gate:
                review = await asker.review(ep.messages, instructions, guidelines, ep.id, ep.termination)
            turns = [{"turn": t.turn_index, "tags": list(t.tags), "severity": t.severity, "reason": t.reason,
                      "scored": t.scored} for t in review.turns]
            scored = all(t["scored"] for t in turns)
            with out.open("a") as f:
                f.write(json.dumps({"id": ep.id, "reviewer": str(asker.identity), "scored": scored, "turns": turns,
                                    "raw": None if scored else review.turns[0].raw}) + "\n")
            print(f"  {ep.id}: {'scored' if scored else 'unscored'}", flush=True)

        await asyncio.gather(*(one(r) for r in todo))


def reviewer_tags(path: Path) -> tuple[dict[str, dict], str]:
    """The latest review of each gold turn in a reviews file: {turn id: {"tags", "severity"}} for scored episodes, and
    the reviewer's identity; unscored episodes are left out (counted by `score`)."""
    latest = {r["id"]: r for r in read_jsonl(path)}
    who = {r["reviewer"] for r in latest.values()}
    if len(who) > 1:
        raise SystemExit(f"{path}: reviews by several reviewers ({', '.join(sorted(who))}): one file per reviewer")
    out = {f"{eid}#{t['turn']}": {"tags": sorted(t["tags"]), "severity": t["severity"]}
           for eid, r in latest.items() if r["scored"] for t in r["turns"]}
    return out, next(iter(who), "")


def rule_predictions(records: list[dict], judge_name: str | None) -> tuple[dict[str, dict], str]:
    """The rules' τ² tags on every gold turn of `records` ({turn id: {"tags", "severity": None}}: rules give no
    severity) and the detector's identity; role drift from the named judge's labels (None: no drift)."""
    from testbed.analysis.tau2.stored_faults import RULES
    from testbed.judges.base import make_judge
    from testbed.judges.specs import load_judge

    judge = make_judge(load_judge(judge_name)) if judge_name else None
    out = {}
    for record in records:
        for turn, tags in rule_tags_by_turn(record, judge).items():
            out[f"{record['id']}#{turn}"] = {"tags": sorted(tags), "severity": None}
    return out, f"{RULES}" + (f" + role drift from {judge.identity}" if judge else "")


def print_score(result: dict) -> None:
    """The score as a markdown table, with the episode-level counts after it."""
    print(f"{result['detector']} on the gold set's {result['split']} split: {result['turns']} of "
          f"{result['labelled_turns']} labelled user turns, {result['episodes']} episodes\n")
    print("| tag | true | flagged | precision (95 % CI) | recall (95 % CI) | F1 |\n|---|---|---|---|---|---|")
    for tag in ("any", *USER_ERROR_TAGS):
        m = result[tag]
        if m["true"] or m["flagged"]:
            print(f"| {tag} | {m['true']} | {m['flagged']} | {m['precision']:.2f} ({m['precision_ci'][0]:.2f}–"
                  f"{m['precision_ci'][1]:.2f}) | {m['recall']:.2f} ({m['recall_ci'][0]:.2f}–{m['recall_ci'][1]:.2f})"
                  f" | {m['f1']:.2f} |")
    for key in ("episodes_any", "episodes_critical_hindered", "episodes_critical_helped"):
        if key in result:
            c = result[key]
            print(f"\n{key}: TP {c['true_positives']} FN {c['false_negatives']} TN {c['true_negatives']} "
                  f"FP {c['false_positives']}", end="")
    print()


def write_rates(reviews: list[Path], judge: str, out: Path) -> None:
    """Each detector's episode-level confusion counts on the held-out split, as the report's corrected shares read
    them (`{"detectors": {identity: {"split", "episodes", "any", "critical_hindered", "critical_helped"}}}`): the rules
    (keyed by their identity; role drift from `judge`) and every reviewer whose reviews are given."""
    from testbed.analysis.tau2.stored_faults import RULES

    records = [r for r in read_jsonl(EPISODES) if r["split"] == "heldout"]
    found = [(str(RULES), *rule_predictions(records, judge))]
    for path in reviews:
        predicted, identity = reviewer_tags(path)
        found.append((identity, predicted, identity))
    detectors = {}
    for key, predicted, detector in found:
        result = score(LABELS, "heldout", predicted, detector)
        detectors[key] = {"split": "heldout", "measured_by": detector, "episodes": result["episodes"],
                          "turns": result["turns"], "labelled_turns": result["labelled_turns"],
                          **{k.removeprefix("episodes_"): v for k, v in result.items() if k.startswith("episodes_")}}
    out.write_text(json.dumps({"detectors": detectors}, indent=1) + "\n")
    print(f"{', '.join(detectors)} -> {out}")


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
    p.add_argument("--judge", default="learned", help="whose labels give the rules' role drift (none: no drift)")
    p.add_argument("--reviews", type=Path, help="score a reviewer's reviews file (from `review`) instead of the rules")
    p = sub.add_parser("rates")
    p.add_argument("--reviews", type=Path, action="append", default=[], help="a reviewer's reviews file (repeatable)")
    p.add_argument("--judge", default="learned", help="whose labels give the rules' role drift")
    p.add_argument("--out", type=Path, default=GOLD / "error-rates.json")
    p = sub.add_parser("review")
    p.add_argument("reviewer", help="the reviewing model: an agent spec, or an LLM judge spec")
    p.add_argument("--split", choices=["dev", "heldout", "all"], default="dev")
    p.add_argument("--out", type=Path, required=True, help="the reviews file (JSON lines; a rerun resumes it)")
    args = parser.parse_args()
    if args.command == "export":
        return export(args.stores, args.out)
    if args.command == "batches":
        return batches(args.episodes, args.out, args.per_batch)
    if args.command in ("agree", "settle"):
        try:
            labelled = [read_labels(path) for path in (args.a, args.b, *([args.c] if args.command == "settle" else []))]
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
    if args.command == "agree":
        a, b = labelled
        print(json.dumps(agreement(a, b), indent=1))
        if args.disputed:
            args.disputed.write_text("\n".join(disputed(a, b)) + "\n")
            print(f"{len(disputed(a, b))} disputed turns -> {args.disputed}")
    elif args.command == "settle":
        try:
            rows = settle(*labelled, EPISODES)
        except ValueError as exc:
            raise SystemExit(str(exc)) from None
        write_jsonl(args.out, rows)
        print(f"{len(rows)} settled labels ({sum(r['settled_by'] == 'third' for r in rows)} by the third) -> {args.out}")
    elif args.command == "rates":
        write_rates(args.reviews, args.judge, args.out)
    elif args.command == "review":
        records = [r for r in read_jsonl(EPISODES) if args.split == "all" or r["split"] == args.split]
        from testbed.backends.base import BackendError

        try:
            asyncio.run(_review_all(records, args.reviewer, args.out))
        except BackendError as exc:
            raise SystemExit(f"{exc.reason}\nReviews written before this are kept in {args.out}; run the same command "
                             "again to continue.") from None
    else:
        if args.reviews:
            predicted, detector = reviewer_tags(args.reviews)
        else:
            records = [r for r in read_jsonl(EPISODES) if args.split == "all" or r["split"] == args.split]
            predicted, detector = rule_predictions(records, None if args.judge == "none" else args.judge)
        result = score(LABELS, args.split, predicted, detector)
        print_score(result)
        if args.json:
            args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
