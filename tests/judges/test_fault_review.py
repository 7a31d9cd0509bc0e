"""Reviews of flagged simulated-user faults with a scripted reviewer, over a stored τ² run whose scripted user invents a
code and stops before its task is done (as tests/analysis/test_tau2_faults.py builds it): only flagged faults are sent,
with the conversation up to the flagged turn; verdicts are stored; an unreadable reply is unscored; a rerun asks nothing
twice; the τ² report gives the hindering share per condition; the command line reviews and fails clearly."""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")

from typer.testing import CliRunner  # noqa: E402

from helpers import write_yaml  # noqa: E402
from tau2_faulty_run import INVENTED, OTHER_USER, STOPPED, faulty_run  # noqa: E402
from testbed.analysis.reports.render import display_rows  # noqa: E402
from testbed.analysis.stats import wilson_interval  # noqa: E402
from testbed.analysis.tau2.faults import flagged_faults  # noqa: E402
from testbed.analysis.tau2.report import tau2_report  # noqa: E402
from testbed.backends.scripted import ScriptedBackend  # noqa: E402
from testbed.cli import app  # noqa: E402
from testbed.analysis.tau2.stored_faults import FAULT_MEANINGS  # noqa: E402
from testbed.judges.fault_review import (PROMPT_SLOTS, PROMPT_VERSION, REVIEWER, UnparsableReview,  # noqa: E402
                                         load_reviewer, parse_review, prompt_path)
from testbed.judges.fault_review_run import review_faults  # noqa: E402
from testbed.scenarios.tau2.user_faults import FAULT_KINDS  # noqa: E402
from testbed.specs.errors import SpecError  # noqa: E402
from testbed.store.records import JudgeIdentity  # noqa: E402
from testbed.store.run_frames import RunFrames

HINDERED = '{"verdict": "hindered", "reason": "the agent acted on the made-up code"}'
HARMLESS = '{"verdict": "harmless", "reason": "nothing was left to do"}'


def by_kind(request) -> str:
    """Invented facts hinder, premature stops are harmless: what a reviewer reading the prompt's kind line would say."""
    return HINDERED if "kind: invented_fact" in request.messages[0]["content"] else HARMLESS


@pytest.fixture
async def run(tmp_path, store):
    """Two conditions (user temperature 0 and 1), each with a faulty episode (an invented code, then a premature stop)
    and a clean one."""
    run_id, _ = await faulty_run(tmp_path, store, temperatures=(0.0, 1.0))
    return store, run_id


@pytest.fixture
def reviewer(tmp_path):
    return load_reviewer(write_yaml(tmp_path / "rev.yaml", {"name": "rev", "backend": "scripted", "model": "rev-model",
                                                             "outputs": [HARMLESS]}))


def faulty(store, run_id, temperature: float | None = None) -> list[str]:
    return [e.key.episode_id for e in store.episodes(run_id)
            if e.key.item_id == STOPPED and (temperature is None or e.key.temperature == temperature)]


def user_turns(store, run_id, eid) -> list[int]:
    return [m.turn_index for m in store.messages(run_id, eid) if m.role == "user" and m.spoken]


def shown_turns(prompt: str) -> list[int]:
    """The message numbers of the conversation a prompt shows."""
    body = prompt.split("<<<BEGIN CONVERSATION")[1].split("<<<END CONVERSATION")[0]
    return [int(n) for n in re.findall(r"^\[(\d+)\]", body, re.M)]


async def test_only_flagged_faults_are_sent_each_with_the_conversation_up_to_its_turn(run, reviewer):
    store, run_id = run
    faults = flagged_faults(store, run_id)
    eids = faulty(store, run_id)
    assert sorted({f.episode_id for f in faults}) == sorted(eids) and len(faults) == 4, "two faults in each faulty episode"
    backend = ScriptedBackend(by_kind)
    summary = await review_faults(store, run_id, faults, reviewer, backend=backend, show_progress=False)
    assert (summary.flagged, summary.skipped, summary.hindered, summary.harmless, summary.unscored) == (4, 0, 2, 2, 0)
    prompts = [r.messages[0]["content"] for r in backend.requests]
    assert len(prompts) == 4 and not any(OTHER_USER in p for p in prompts), "the clean episodes are never sent"
    for eid in eids:
        first, last = user_turns(store, run_id, eid)
        invented = next(p for p in prompts if "kind: invented_fact" in p and f"numbered [{first}]" in p)
        assert shown_turns(invented)[-1] == first and INVENTED in invented, "nothing after the flagged turn is shown"
        stopped = next(p for p in prompts if "kind: premature_stop" in p and f"numbered [{last}]" in p)
        assert shown_turns(stopped)[-1] == last and "undone: create_task" in stopped
    assert all(r.response_format["json_schema"]["schema"]["properties"]["verdict"]["enum"] == ["hindered", "harmless"]
               for r in backend.requests), "a backend that honours schemas gets the review's"
    stored = store.fault_reviews(run_id)
    who = JudgeIdentity(REVIEWER, PROMPT_VERSION, "rev-model")
    assert summary.identity == who and {r.reviewer for r in stored} == {who}
    assert sorted((r.episode_id, r.kind, r.verdict) for r in stored) == sorted(
        (eid, kind, verdict) for eid in eids for kind, verdict in (("invented_fact", "hindered"), ("premature_stop", "harmless")))
    assert all(r.reason and r.raw in (HINDERED, HARMLESS) and r.attempts == 1 for r in stored)


async def test_an_unparseable_reply_is_unscored_with_every_reply_kept_never_a_verdict(run, reviewer):
    store, run_id = run
    backend = ScriptedBackend(lambda request: "I would say it hindered the agent.")
    summary = await review_faults(store, run_id, flagged_faults(store, run_id), reviewer, backend=backend, show_progress=False)
    assert (summary.hindered, summary.harmless, summary.unscored) == (0, 0, 4)
    assert len(backend.requests) == 4 * 3, "each fault is asked once and retried twice"
    retry = backend.requests[-1].messages
    assert retry[1]["role"] == "assistant" and "not a valid review" in retry[2]["content"]
    for review in store.fault_reviews(run_id):
        assert review.verdict is None and review.attempts == 3 and review.reason == "unparsable after 3 attempts"
        assert review.raw.count("I would say it hindered the agent.") == 3
    (row, _) = tau2_report(RunFrames(store, run_id, None)).to_dict("records")
    assert (row["fault_reviewed"], row["fault_review_unscored"]) == (0, 2) and row["fault_hindered"] != row["fault_hindered"]
    assert row["failed_hindered_known"] == 0, "a failed episode whose faults are unscored is not known to be hindered or not"


async def test_a_rerun_asks_nothing_already_reviewed_and_asks_again_what_was_unscored(run, reviewer):
    store, run_id = run
    faults = flagged_faults(store, run_id)
    stops_unread = ScriptedBackend(lambda r: HINDERED if "kind: invented_fact" in r.messages[0]["content"] else "no idea")
    first = await review_faults(store, run_id, faults, reviewer, backend=stops_unread, show_progress=False)
    assert (first.hindered, first.unscored, len(stops_unread.requests)) == (2, 2, 2 + 2 * 3)
    again = ScriptedBackend(by_kind)
    second = await review_faults(store, run_id, faults, reviewer, backend=again, show_progress=False)
    assert (second.skipped, second.harmless, second.unscored) == (2, 2, 0)
    assert len(again.requests) == 2 and all("kind: premature_stop" in r.messages[0]["content"] for r in again.requests)
    idle = ScriptedBackend([])
    third = await review_faults(store, run_id, faults, reviewer, backend=idle, show_progress=False)
    assert (third.skipped, len(idle.requests)) == (4, 0), "a fully reviewed run asks nothing"
    assert sorted(r.verdict for r in store.fault_reviews(run_id)) == ["harmless", "harmless", "hindered", "hindered"]


async def test_the_report_gives_the_hindering_share_per_condition_and_of_failed_episodes(run, reviewer):
    store, run_id = run
    before = tau2_report(RunFrames(store, run_id, None))
    assert "fault_hindered" not in before and "hindering faults (95% CI)" not in display_rows(before)[0]
    cold = set(faulty(store, run_id, 0.0))
    faults = [f for f in flagged_faults(store, run_id) if f.episode_id in cold]
    await review_faults(store, run_id, faults, reviewer, backend=ScriptedBackend(by_kind), show_progress=False)
    report = tau2_report(RunFrames(store, run_id, None))
    rows = {r["temperature"]: r for r in report.to_dict("records")}
    reviewed, unreviewed = rows[0.0], rows[1.0]
    assert (reviewed["fault_hindered"], reviewed["fault_reviewed"], reviewed["fault_review_unscored"]) == (0.5, 2, 0)
    assert (reviewed["fault_hindered_lo"], reviewed["fault_hindered_hi"]) == pytest.approx(wilson_interval(1, 2))
    assert (reviewed["failed_hindered"], reviewed["failed_hindered_known"]) == (1.0, 1)
    assert (reviewed["failed_hindered_lo"], reviewed["failed_hindered_hi"]) == pytest.approx(wilson_interval(1, 1))
    assert reviewed["fault_reviewer"] == f"{REVIEWER}@{PROMPT_VERSION}:rev-model"
    assert unreviewed["fault_reviewed"] == 0 and unreviewed["fault_hindered"] != unreviewed["fault_hindered"]
    assert unreviewed["failed_hindered_known"] == 0, "its failed episode's faults were never reviewed"
    assert reviewed["fault_any"] == 0.5 and reviewed["reward"] == 0.5, "the other columns stay"
    header, shown = display_rows(report)
    at = header.index("hindering faults (95% CI)")
    assert shown[[r[4] for r in shown].index("0")][at].startswith("50.0%")
    assert header[at + 1:at + 4] == ["faults reviewed", "reviews unscored", "failed with hindering fault (95% CI)"]


def test_parsing_is_strict_about_the_verdict_and_tidies_the_reason():
    assert parse_review('```json\n{"verdict": " Hindered", "reason": "two\\n lines"}\n```') == ("hindered", "two lines")
    for reply, problem in (("It hindered.", "not a JSON object"), ('["hindered"]', "not an object"),
                           ('{"verdict": "maybe", "reason": ""}', "`verdict` must be"), ('{"reason": "x"}', "`verdict` must be"),
                           ('{"verdict": "harmless", "reason": 3}', "`reason` is not")):
        with pytest.raises(UnparsableReview, match=problem):
            parse_review(reply)


def test_the_prompt_holds_every_slot_and_no_benchmark_text_and_every_kind_has_a_meaning():
    prompt = prompt_path().read_text()
    assert all("{" + slot + "}" in prompt for slot in PROMPT_SLOTS)
    assert not re.search(r"τ|tau|airline|retail|telecom|sierra", prompt, re.I)
    assert set(FAULT_MEANINGS) == set(FAULT_KINDS)


def test_the_reviewer_is_an_agent_spec_or_an_llm_judge_specs_agent_and_settings(tmp_path):
    agent = write_yaml(tmp_path / "rev.yaml", {"name": "rev", "backend": "scripted", "model": "r", "concurrency": 3,
                                               "outputs": ["x"]})
    assert load_reviewer(agent).settings.concurrency == 3 and load_reviewer(agent).settings.max_retries == 2
    (tmp_path / "p.md").write_text("{question} {answer} {user_turn}")
    judge = write_yaml(tmp_path / "j.yaml", {"name": "j", "kind": "llm", "task": "followup", "prompt_file": "p.md",
                                             "prompt_version": "j-1", "agent": "rev.yaml", "max_retries": 0, "temperature": 0.5})
    resolved = load_reviewer(judge)
    assert (resolved.agent.spec.model, resolved.settings.max_retries, resolved.settings.temperature) == ("r", 0, 0.5)
    with pytest.raises(SpecError, match="no model to review"):
        load_reviewer("local")
    with pytest.raises(SpecError, match="no-such-reviewer"):
        load_reviewer(str(tmp_path / "no-such-reviewer.yaml"))


def test_the_command_reviews_reports_and_a_dead_server_is_one_message(run, tmp_path):
    store, run_id = run
    db = str(store.path)
    write_yaml(tmp_path / "rev.yaml", {"name": "rev", "backend": "scripted", "model": "rev-model", "outputs": [HINDERED] * 4})
    write_yaml(tmp_path / "dead.yaml", {"name": "dead", "backend": "vllm", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    cli = CliRunner()
    dead = cli.invoke(app, ["review-faults", run_id[:8], "--judge", str(tmp_path / "dead.yaml"), "--store", db, "-q"])
    assert dead.exit_code == 2 and "http://127.0.0.1:9/v1" in dead.output and "kept" in dead.output
    assert "Traceback" not in dead.output and store.fault_reviews(run_id) == []
    done = cli.invoke(app, ["review-faults", run_id[:8], "--judge", str(tmp_path / "rev.yaml"), "--store", db, "-q"])
    assert done.exit_code == 0, done.output
    assert "4 hindered, 0 harmless, 0 unscored of 4 flagged faults asked now; 0 already reviewed" in done.output
    again = cli.invoke(app, ["review-faults", run_id, "--judge", str(tmp_path / "rev.yaml"), "--store", db, "-q"])
    assert "of 0 flagged faults asked now; 4 already reviewed" in again.output
    rows = json.loads(cli.invoke(app, ["report", run_id, "--store", db, "-f", "json", "--judge", "none"]).stdout)
    assert [(r["fault_hindered"], r["fault_reviewed"]) for r in rows] == [(1.0, 2), (1.0, 2)]
