"""Whole-conversation reviews of a stored τ² run's simulated users with a scripted reviewer (no model), over the scripted
run whose stopping user invents a ticket code and stops before its task is done: every finished episode is sent whole
with the user's instructions and guidelines read from τ²; each user turn is stored with the reviewer's identity; a
rerun skips the scored episodes and asks again the unscored ones; the command line reviews, counts, and keeps what
was stored when the server is dead."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from typer.testing import CliRunner  # noqa: E402

from helpers import write_yaml  # noqa: E402
from tau2_faulty_run import INVENTED, STOPPED, faulty_run  # noqa: E402
from testbed.analysis.tau2.stored_faults import DETECTOR  # noqa: E402
from testbed.backends.scripted import ScriptedBackend  # noqa: E402
from testbed.cli import app  # noqa: E402
from testbed.judges.conversation_review import PROMPT_VERSION, REVIEWER  # noqa: E402
from testbed.judges.conversation_review_run import review_conversations, vocabulary_of  # noqa: E402
from testbed.judges.fault_review import load_reviewer  # noqa: E402
from testbed.scenarios.tau2.domains import domain  # noqa: E402
from testbed.scenarios.tau2.fault_tags import SEVERITIES, USER_ERROR_TAGS  # noqa: E402
from testbed.store.records import JudgeIdentity  # noqa: E402
from testbed.store.turn_reviews import turn_reviews_df  # noqa: E402

CLEAN = '{"errors": [], "summary": "the user played its part"}'
WHO = JudgeIdentity(REVIEWER, PROMPT_VERSION, "rev-model")


def tags_invented(request) -> str:
    """Tags the user turn that carries the invented code as a hindering hallucination, the rest clean: what a reviewer
    reading the numbered conversation would say."""
    prompt = request.messages[0]["content"]
    turn = re.search(rf"^\[(\d+)\] USER: .*{INVENTED}", prompt, re.M)
    if turn is None:
        return CLEAN
    error = {"turn": int(turn.group(1)), "tags": ["hallucination"], "severity": "critical_hindered", "reason": "made-up code"}
    return json.dumps({"errors": [error], "summary": "one invented fact"})


@pytest.fixture
async def run(tmp_path, store):
    run_id, _ = await faulty_run(tmp_path, store)
    return store, run_id


@pytest.fixture
def reviewer(tmp_path):
    return load_reviewer(write_yaml(tmp_path / "rev.yaml", {"name": "rev", "backend": "scripted", "model": "rev-model",
                                                             "outputs": [CLEAN]}))


def user_turns_of(store, run_id, eid) -> list[int]:
    return [m.turn_index for m in store.messages(run_id, eid) if m.role == "user"]


def stopping(store, run_id) -> str:
    return next(e.key.episode_id for e in store.episodes(run_id) if e.key.item_id == STOPPED)


async def test_every_finished_episode_is_reviewed_whole_and_stored_per_user_turn(run, reviewer):
    store, run_id = run
    contexts, why = DETECTOR.review_contexts(store, run_id)
    assert why == "" and len(contexts) == 2
    backend = ScriptedBackend(tags_invented)
    summary = await review_conversations(store, run_id, contexts, reviewer, vocabulary_of(DETECTOR), backend=backend,
                                         show_progress=False)
    assert (summary.identity, summary.episodes, summary.skipped, summary.reviewed, summary.unscored) == (WHO, 2, 0, 2, 0)
    assert summary.by_severity == {"critical_hindered": 1, "critical_helped": 0, "minor": 0}
    prompts = [r.messages[0]["content"] for r in backend.requests]
    scenario = str(domain("mock").tasks[STOPPED].user_scenario)
    shown = next(p for p in prompts if INVENTED in p)
    assert scenario.splitlines()[0] in shown, "the user's instructions come from the installed τ² task"
    assert "shown apart above" in shown and all(t in shown for t in USER_ERROR_TAGS + SEVERITIES)
    assert "ended: the USER ended the conversation" in shown, "the stored termination is shown"
    eid = stopping(store, run_id)
    frame = turn_reviews_df(store, run_id)
    assert sorted(map(tuple, frame[["episode_id", "turn_index"]].values.tolist())) == sorted(
        (e, t) for e in contexts for t in user_turns_of(store, run_id, e)), "one row per user turn of every episode"
    tagged = frame[frame.severity.notna()]
    assert tagged.episode_id.tolist() == [eid] and tagged.tags.tolist() == [("hallucination",)]
    assert tagged.turn_index.tolist() == [user_turns_of(store, run_id, eid)[0]]
    assert set(frame.status) == {"scored"} and set(frame.reviewer) == {str(WHO)} == {"user-review@user-review-1:rev-model"}
    assert store.turn_reviewers(run_id) == [WHO]


async def test_a_rerun_skips_scored_episodes_and_asks_again_the_unscored(run, reviewer):
    store, run_id = run
    contexts, _ = DETECTOR.review_contexts(store, run_id)
    eid = stopping(store, run_id)
    garbles_stopping = ScriptedBackend(lambda r: "It looks fine to me." if INVENTED in r.messages[0]["content"] else CLEAN)
    first = await review_conversations(store, run_id, contexts, reviewer, vocabulary_of(DETECTOR), backend=garbles_stopping,
                                       show_progress=False)
    assert (first.reviewed, first.unscored, len(garbles_stopping.requests)) == (1, 1, 1 + 3)
    unread = [r for who, r in store.turn_reviews(run_id) if r.episode_id == eid]
    assert unread and all(not r.scored and r.severity is None and r.raw.count("It looks fine to me.") == 3 for r in unread)
    assert store.reviewed_conversations(run_id, WHO) == set(contexts) - {eid}
    again = ScriptedBackend(tags_invented)
    second = await review_conversations(store, run_id, contexts, reviewer, vocabulary_of(DETECTOR), backend=again,
                                        show_progress=False)
    assert (second.skipped, second.reviewed, second.unscored, len(again.requests)) == (1, 1, 0, 1)
    assert INVENTED in again.requests[0].messages[0]["content"]
    latest = [r for _, r in store.turn_reviews(run_id) if r.episode_id == eid]
    assert all(r.scored for r in latest) and sum(bool(r.tags) for r in latest) == 1, "the latest row per turn counts"
    idle = ScriptedBackend([])
    third = await review_conversations(store, run_id, contexts, reviewer, vocabulary_of(DETECTOR), backend=idle,
                                       show_progress=False)
    assert (third.skipped, len(idle.requests)) == (2, 0)


def test_the_command_reviews_whole_conversations_counts_and_a_dead_server_keeps_what_was_stored(run, tmp_path):
    store, run_id = run
    db = str(store.path)
    reply = json.dumps({"errors": [{"turn": 2, "tags": ["revealed_info_early"], "severity": "minor", "reason": "r"}],
                        "summary": "s"})
    write_yaml(tmp_path / "rev.yaml", {"name": "rev", "backend": "scripted", "model": "rev-model", "outputs": [reply, "nonsense"] + ["nonsense"] * 2})
    write_yaml(tmp_path / "dead.yaml", {"name": "dead", "backend": "vllm", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    cli = CliRunner()
    dead = cli.invoke(app, ["review-faults", run_id[:8], "--whole", "--judge", str(tmp_path / "dead.yaml"), "--store", db, "-q"])
    assert dead.exit_code == 2 and "http://127.0.0.1:9/v1" in dead.output and "kept" in dead.output
    assert "Traceback" not in dead.output and store.turn_reviews(run_id) == []
    done = cli.invoke(app, ["review-faults", run_id[:8], "--whole", "--judge", str(tmp_path / "rev.yaml"), "--store", db, "-q"])
    assert done.exit_code == 0, done.output
    assert all(2 in user_turns_of(store, run_id, e.key.episode_id) for e in store.episodes(run_id))
    assert ("reviewer user-review@user-review-1:rev-model: 1 episodes reviewed" in done.output
            and "tagged: 0 critical_hindered, 0 critical_helped, 1 minor), 1 unscored; 0 of 2 finished" in done.output)
    flags = cli.invoke(app, ["review-faults", run_id, "--whole", "--labels", "none", "--judge", str(tmp_path / "rev.yaml"),
                             "--store", db])
    assert flags.exit_code != 0 and "drop --labels" in flags.output


def test_the_guidelines_are_the_runs_own_user_prompt_and_an_episode_without_a_task_is_left_out(run):
    store, run_id = run
    spec = store.run(run_id).spec
    spec["user_prompt"] = "HOUSE RULES FIRST\n{guidelines}\n<s>{scenario}</s>"
    eid = stopping(store, run_id)
    with store.conn:
        store.conn.execute("UPDATE runs SET spec_json=? WHERE run_id=?", (json.dumps(spec), run_id))
        store.conn.execute("UPDATE episodes SET item_id='no_such_task' WHERE run_id=? AND episode_id=?", (run_id, eid))
    contexts, why = DETECTOR.review_contexts(store, run_id)
    assert eid not in contexts and why == "the installed τ² has no task for 1 of 2 finished episodes"
    ((instructions, guidelines),) = contexts.values()
    assert guidelines.startswith("HOUSE RULES FIRST\n") and "<s>(the user's instructions, shown apart above)</s>" in guidelines
    assert "###STOP###" in guidelines, "τ²'s simulation guidelines fill the run's prompt"
    assert instructions not in guidelines
