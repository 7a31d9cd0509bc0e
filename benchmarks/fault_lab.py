"""The fault-injection lab: each simulated-user fault detector's precision, recall and F1 on planted faults, with
intervals, and its false-positive rate on clean episodes and near misses.

Episodes are τ² episodes of every domain (every task of mock; a seeded sample of airline, retail and telecom) played
by the lab's instruments (testbed.scenarios.tau2.fault_lab: a procedural assistant and a discreet scripted user, on
CPU, no model), run through the τ² kind with a `user_faults` grid (testbed.specs.tau2): each faulty episode has one
fault planted at a chosen user turn, each near-miss episode one near miss, each clean episode nothing. The stored
episodes then go through what a real run goes through: the rules stored as the run ends
(testbed.analysis.tau2.stored_faults) and the default judge (`learned`, as `testbed judge` runs it), whose drift
labels are the role-drift faults. Every detector is scored at the turn level (testbed.analysis.tau2.detector_error):
per rule kind and per τ² tag, per domain and over all, planted kind × flag kind, near misses, clean episodes.

    .venv/bin/python benchmarks/fault_lab.py [--seed 0] [--tasks-per-domain 20] [--json OUT] [--store PATH]
                                             [--reviewer AGENT_OR_JUDGE_SPEC]

`--reviewer` also has the whole-conversation reviewer (testbed.judges.conversation_review, as `testbed review-faults
--whole` runs it) tag every lab episode and scores its per-turn tags the same way, per τ² tag, on the spoken user
turns of the episodes it scored (an unscored review is left out and counted). It needs a model: one call per episode.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from testbed.analysis.tau2.detector_error import clean_rates, cross_table, target_table  # noqa: E402
from testbed.scenarios.tau2.fault_injection import FAULTS, PLANTED, applicable, plan_record  # noqa: E402
from testbed.scenarios.tau2.fault_lab import LAB_TURNS, stop_turn  # noqa: E402
from testbed.scenarios.tau2.fault_tags import RULE_TAGS  # noqa: E402
from testbed.scenarios.tau2.user_faults import FAULT_KINDS  # noqa: E402
from testbed.specs.tau2 import plan_of  # noqa: E402

DOMAINS = ("mock", "airline", "retail", "telecom")
SAMPLED = 20
"""Tasks drawn per sampled domain (airline, retail, telecom) at the defaults; mock runs all of its tasks."""
PLANS = ("premature_stop@2", "premature_stop@3", "revealed_early@1", "invented_fact@1", "invented_fact@3",
         "ungrounded_device_claim@1", "ungrounded_device_claim@3", "answers_as_agent@2", "answers_as_agent@3",
         "contradiction@3", "contradiction@4", "ignores_instruction@4",
         "near_revealed_after_ask@2", "near_agent_said_first@3", "near_device_after_check@3",
         "near_stop_after_transfer@4", "near_stop_after_refusal@4")
"""Every planted turn the lab runs on each task (where it applies), beside `none` and the stop after the work done."""
assert LAB_TURNS["details"] == 2 and LAB_TURNS["open_question"] == 3 and LAB_TURNS["confirmation"] == 4


def chosen_tasks(domain_name: str, per_domain: int, seed: int) -> list:
    """Every mock task; a seeded sample of `per_domain` tasks of another domain's default split. Tasks that open with a
    message history are left out: the lab counts user turns from τ²'s greeting, and its user cannot tell the history's
    user turns from its own."""
    from testbed.scenarios.tau2.domains import domain

    d = domain(domain_name)
    ids = sorted(t for t in d.task_ids(d.default_split) if not _has_history(d.tasks[t]))
    if domain_name != "mock":
        ids = sorted(random.Random(f"{seed}:{domain_name}").sample(ids, min(per_domain, len(ids))))
    return [d.tasks[t] for t in ids]


def _has_history(task) -> bool:
    state = task.initial_state
    return bool(state is not None and state.message_history)


async def run_lab(store, spec_path: Path, domain_name: str, tasks: list, plans: list[str], seed: int,
                  user_prompt: Path) -> str:
    """Run `tasks` of a domain under the `user_faults` grid `none` + `plans` with the lab's instruments into `store`,
    through the τ² kind as any run goes (its spec written at `spec_path`, its user prompt file `user_prompt`); the
    run id. The rules' faults are stored as the run ends."""
    import yaml

    from testbed.running.runner import run_scenario
    from testbed.scenarios.tau2.fault_lab import LabAssistant, LabUser
    from testbed.scenarios.tau2.kind import Tau2Kind
    from testbed.specs.loader import load_scenario

    agent = spec_path.parent / "fault-lab-agent.yaml"
    agent.write_text(yaml.safe_dump({"name": "fault-lab", "backend": "scripted", "model": "fault-lab", "outputs": ["x"]}))
    spec_path.write_text(yaml.safe_dump({
        "kind": "tau2", "name": spec_path.stem, "domain": domain_name, "tasks": {"ids": [t.id for t in tasks]},
        "assistant": agent.name, "user": agent.name, "user_prompt_file": str(user_prompt.resolve()),
        "user_faults": ["none", *plans], "max_tokens": 64, "max_steps": 200, "seed": seed}))
    scenario = load_scenario(spec_path)
    episodes = {v.key.episode_id: (task, v.user_fault) for task, variants in Tau2Kind().plan(scenario) for v in variants}
    backends = {"assistant": LabAssistant(episodes), "user": LabUser(tasks)}
    summary = await run_scenario(scenario, store, backends=backends, show_progress=False)
    return summary.run_id


def judge_drift(store, run_id: str):
    """Label the run's user turns with the default judge and store the drift faults its labels imply, as `testbed judge`
    does; the judge's identity."""
    from testbed.judges.runner import judge_run
    from testbed.judges.specs import load_judge
    from testbed.running.user_faults import store_judged_faults
    from testbed.store.labels import DEFAULT_JUDGE

    summary = asyncio.run(judge_run(store, run_id, load_judge(DEFAULT_JUDGE), show_progress=False))
    store_judged_faults(store, run_id, summary.identity)
    return summary.identity


def collect(store, run_id: str, domain_name: str, judge) -> tuple[list[dict], list[dict], list[dict]]:
    """The run's user turns with what was planted on each, its episodes, and the stored flags of rules and judge."""
    from testbed.store.frames import episodes_df
    from testbed.store.user_faults import faults_df
    from testbed.transcript import is_user

    frame = episodes_df(store, run_id, exact=True).set_index("episode_id")
    turns, episodes = [], []
    for eid, messages in store.iter_messages(run_id, include_errored=True):
        e = frame.loc[eid]
        plan = plan_of(e.perturbation)
        record = plan_record(messages)
        planted_at = record[2] if record is not None else None
        planted = plan.kind if plan is not None and record is not None else ""
        episodes.append({"episode_id": eid, "domain": domain_name, "item_id": e.item_id, "status": e.status,
                         "termination": e.termination, "plan": plan.label if plan else "none",
                         "delivered": plan is None or record is not None, "detail": record[3] if record else ""})
        for m in messages:
            if is_user(m) and m.spoken:
                here = m.turn_index == planted_at
                turns.append({"episode_id": eid, "domain": domain_name, "turn_index": m.turn_index,
                              "planted": planted if here else "", "detail": record[3] if here else ""})
    flags = faults_df(store, run_id, judge)
    return turns, episodes, flags[["episode_id", "turn_index", "kind"]].to_dict("records")


def targets_by_rule() -> dict:
    """Each rule kind as a target: the planted faults it should flag are its positives."""
    return {kind: ((lambda planted, kind=kind: planted in PLANTED and not PLANTED[planted].near_miss
                    and PLANTED[planted].rule == kind),
                   (lambda flagged, kind=kind: flagged == kind)) for kind in FAULT_KINDS}


def targets_by_tag() -> dict:
    """Each τ² tag a planted fault counts under as a target: the rules counted under it (RULE_TAGS) flag it."""
    tags = dict.fromkeys(p.tag for p in FAULTS)
    return {tag: ((lambda planted, tag=tag: planted in PLANTED and PLANTED[planted].tag == tag),
                  (lambda flagged, tag=tag: RULE_TAGS.get(flagged) == tag)) for tag in tags}


def review_whole(store, run_id: str, reviewer_ref: str | Path, backend=None) -> tuple[list[dict], set[str], set[str], str]:
    """Have the whole-conversation reviewer tag the run's finished episodes (`backend` replacing its model, for tests):
    its tags as flags (`kind` a τ² tag) on the episodes it scored, those episodes, those it left unscored, and its
    identity."""
    from testbed.analysis.tau2.stored_faults import DETECTOR
    from testbed.judges.conversation_review_run import review_conversations, vocabulary_of
    from testbed.judges.fault_review import load_reviewer
    from testbed.store.turn_reviews import turn_reviews_df

    contexts, _ = DETECTOR.review_contexts(store, run_id)
    summary = asyncio.run(review_conversations(store, run_id, contexts, load_reviewer(reviewer_ref), vocabulary_of(DETECTOR),
                                               backend=backend, show_progress=False))
    frame = turn_reviews_df(store, run_id, summary.identity)
    scored = set(frame.episode_id) - set(frame[frame.status != "scored"].episode_id)
    frame = frame[frame.episode_id.isin(scored)]
    flags = [{"episode_id": e, "turn_index": int(t), "kind": tag} for e, t, tags in zip(frame.episode_id, frame.turn_index, frame.tags)
             for tag in tags]
    return flags, scored, set(frame.episode_id) - scored, str(summary.identity)


def lab(seed: int, per_domain: int, domains: tuple[str, ...], keep: Path | None = None, reviewer: str | Path | None = None,
        reviewer_backend=None) -> dict:
    """Run the lab (into the store `keep` when given, else a temporary one; with the whole-conversation `reviewer` too
    when given); every table as records, with the run's size and time."""
    from testbed.store import Store

    started = time.perf_counter()
    turns, episodes, flags = [], [], []
    reviewed, reviewed_episodes, unscored, reviewer_name = [], set(), set(), None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = Store(keep or folder / "lab.db")
        for domain_name in domains:
            tasks = chosen_tasks(domain_name, per_domain, seed)
            groups: dict[int, list] = {}
            for task in tasks:
                groups.setdefault(stop_turn(task), []).append(task)
            for stop, group in sorted(groups.items()):
                plans = [p for p in PLANS if any(applicable(p.partition("@")[0], t) for t in group)]
                plans.append(f"near_stop_after_done@{stop}")
                run_id = asyncio.run(run_lab(store, folder / f"lab-{domain_name}-{stop}.yaml", domain_name, group, plans, seed,
                                             REPO / "scenarios/prompts/user-tau2.md"))
                judge = judge_drift(store, run_id)
                t, e, f = collect(store, run_id, domain_name, judge)
                turns += t
                episodes += e
                flags += f
                if reviewer is not None:
                    r, scored, left, reviewer_name = review_whole(store, run_id, reviewer, reviewer_backend)
                    reviewed += r
                    reviewed_episodes |= scored
                    unscored |= left
        store.close()
    columns = ["episode_id", "turn_index", "kind"]
    out = tables(pd.DataFrame(turns), pd.DataFrame(episodes), pd.DataFrame(flags, columns=columns), seed,
                 time.perf_counter() - started, str(judge))
    if reviewer is not None:
        out["reviewer"] = reviewer_tables(pd.DataFrame(turns), pd.DataFrame(episodes), pd.DataFrame(reviewed, columns=columns),
                                          reviewed_episodes, unscored, seed, reviewer_name)
    return out


def reviewer_tables(turns: pd.DataFrame, episodes: pd.DataFrame, flags: pd.DataFrame, scored: set[str], unscored: set[str],
                    seed: int, name: str | None) -> dict:
    """The reviewer's error per τ² tag, on the episodes it scored whose plan was carried out, and on its clean ones
    (episodes τ²'s evaluator failed on are not reviewed: the reviewer reads finished episodes only)."""
    kept = set(episodes[episodes.delivered & (episodes.termination != "error")].episode_id) & scored
    turns, flags = turns[turns.episode_id.isin(kept)], flags[flags.episode_id.isin(kept)]
    clean = set(episodes[episodes.plan == "none"].episode_id) & kept
    targets = {tag: ((lambda planted, tag=tag: planted in PLANTED and PLANTED[planted].tag == tag),
                     (lambda flagged, tag=tag: flagged == tag)) for tag in dict.fromkeys(p.tag for p in FAULTS)}
    return {"identity": name, "scored_episodes": len(kept), "unscored_episodes": len(unscored),
            "not_reviewed_episodes": len(set(episodes.episode_id) - scored - unscored),
            "by_tag": target_table(turns, flags, targets, seed).to_dict("records"), "clean": clean_rates(turns, flags, clean)}


def tables(turns: pd.DataFrame, episodes: pd.DataFrame, flags: pd.DataFrame, seed: int, seconds: float, judge: str) -> dict:
    """The lab's tables from its turns, episodes and flags. Episodes whose plan was not carried out are left out;
    those τ²'s evaluator failed on (after the conversation ended) are kept, their turns are what is scored."""
    kept = set(episodes[episodes.delivered & (episodes.termination != "error")].episode_id)
    turns = turns[turns.episode_id.isin(kept)]
    flags = flags[flags.episode_id.isin(kept)]
    clean = set(episodes[(episodes.plan == "none") & episodes.episode_id.isin(kept)].episode_id)
    near = turns[turns.planted.map(lambda k: k in PLANTED and PLANTED[k].near_miss)]
    near_rows = []
    for kind, part in near.groupby("planted"):
        tempted = PLANTED[kind].rule
        hit = flags.merge(part, on=["episode_id", "turn_index"])
        hit = hit[hit.kind == tempted].drop_duplicates(["episode_id", "turn_index"])
        near_rows.append({"near_miss": kind, "tempts": tempted, "turns": len(part), "flagged": len(hit)})
    return {
        "seed": seed, "seconds": round(seconds, 1), "judge": judge,
        "episodes": int(len(episodes)), "scored_episodes": len(kept),
        "not_planted": episodes[~episodes.delivered].groupby("plan").size().to_dict(),
        "errored": int((episodes.status != "done").sum()),
        "loop_errors": int((episodes.termination == "error").sum()),
        "by_rule": target_table(turns, flags, targets_by_rule(), seed).to_dict("records"),
        "by_tag": target_table(turns, flags, targets_by_tag(), seed).to_dict("records"),
        "cross": cross_table(turns, flags, list(FAULT_KINDS)).reset_index(names="planted").to_dict("records"),
        "near_misses": near_rows,
        "shapes": shape_rows(turns, flags),
        "clean": clean_rates(turns, flags, clean),
        "clean_by_domain": {d: clean_rates(turns[turns.domain == d], flags, clean & set(turns[turns.domain == d].episode_id))
                            for d in sorted(turns.domain.unique())},
    }


def shape_rows(turns: pd.DataFrame, flags: pd.DataFrame) -> list[dict]:
    """Per planted fault that a rule should flag, per shape of what was planted (an invented id, amount, name or date; a
    device claim's topic, `-worded` where it names no on/off state; a name said other than "my name is"): how many
    turns, and how many its rule flagged."""
    planted = turns[turns.planted.map(lambda k: k in PLANTED and not PLANTED[k].near_miss and PLANTED[k].rule is not None)]
    planted = planted.assign(shape=planted.detail.str.split().str[0])
    rows = []
    for (kind, shape), part in planted.groupby(["planted", "shape"]):
        rule = PLANTED[kind].rule
        hit = flags[flags.kind == rule].merge(part, on=["episode_id", "turn_index"]).drop_duplicates(["episode_id", "turn_index"])
        rows.append({"planted": kind, "shape": shape, "rule": rule, "turns": len(part), "flagged": len(hit)})
    return rows


def _interval(row: dict, name: str) -> str:
    value, low, high = row[name], row[f"{name}_low"], row[f"{name}_high"]
    if value != value:
        return "–"
    return f"{value:.2f} [{low:.2f}, {high:.2f}]"


def markdown(out: dict) -> str:
    """The lab's tables as markdown."""
    lines = [f"fault lab: {out['scored_episodes']} episodes scored of {out['episodes']} ({out['errored']} errored; "
             f"{out['loop_errors']} of them in the conversation; plans that could not be carried out: "
             f"{out['not_planted'] or 'none'}), judge {out['judge']}, seed {out['seed']}, "
             f"{out['seconds']} s", ""]
    sections = [("rule kind", out["by_rule"]), ("τ² tag (rules and judge)", out["by_tag"])]
    if "reviewer" in out:
        sections.append((f"τ² tag (reviewer {out['reviewer']['identity']})", out["reviewer"]["by_tag"]))
    for title, rows in sections:
        lines += [f"| {title} | domain | TP | FP | FN | precision [95 %] | recall [95 %] | F1 [95 %] |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['target']} | {r['domain']} | {r['tp']} | {r['fp']} | {r['fn']} | {_interval(r, 'precision')} | "
                  f"{_interval(r, 'recall')} | {_interval(r, 'f1')} |" for r in rows]
        lines.append("")
    kinds = list(FAULT_KINDS)
    lines += ["| planted \\ flagged | turns | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    lines += [f"| {r['planted']} | {r['turns']} | " + " | ".join(str(r[k]) for k in kinds) + " |" for r in out["cross"]]
    lines += ["", "| near miss | tempts | turns | flagged |", "|---|---|---|---|"]
    lines += [f"| {r['near_miss']} | {r['tempts']} | {r['turns']} | {r['flagged']} |" for r in out["near_misses"]]
    lines += ["", "| planted fault | shape | rule | turns | flagged |", "|---|---|---|---|---|"]
    lines += [f"| {r['planted']} | {r['shape']} | {r['rule']} | {r['turns']} | {r['flagged']} |" for r in out["shapes"]]
    lines += ["", "| clean episodes | episodes | with any flag [95 %] | flags per user turn |", "|---|---|---|---|"]
    for name, c in [("all", out["clean"]), *out["clean_by_domain"].items()]:
        lines.append(f"| {name} | {c['episodes']} | {c['flagged_episodes']} = {_interval(c, 'flagged_share')} | "
                     f"{c['flags_per_turn']:.3f} ({c['flags']} / {c['turns']}) |")
    if "reviewer" in out:
        c = out["reviewer"]["clean"]
        lines.append(f"| all, reviewer {out['reviewer']['identity']} ({out['reviewer']['unscored_episodes']} episodes unscored) | "
                     f"{c['episodes']} | {c['flagged_episodes']} = {_interval(c, 'flagged_share')} | "
                     f"{c['flags_per_turn']:.3f} ({c['flags']} / {c['turns']}) |")
    return "\n".join(lines)


def main() -> None:
    """Run the lab and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="draws the sampled tasks and what planted faults invent")
    parser.add_argument("--tasks-per-domain", type=int, default=SAMPLED,
                        help="tasks drawn from each of airline, retail and telecom (mock runs all of its tasks)")
    parser.add_argument("--domains", default=",".join(DOMAINS), help="comma-separated domains to run")
    parser.add_argument("--json", type=Path, help="also write every table here as JSON")
    parser.add_argument("--reviewer", help="also score the whole-conversation reviewer on this agent or LLM judge spec "
                        "(needs its model; one call per episode)")
    parser.add_argument("--store", type=Path, help="keep the lab's runs in this store (to replay them) instead of a temporary one")
    args = parser.parse_args()
    out = lab(args.seed, args.tasks_per_domain, tuple(args.domains.split(",")), args.store, args.reviewer)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1, default=str))
    print(markdown(out))


if __name__ == "__main__":
    main()
