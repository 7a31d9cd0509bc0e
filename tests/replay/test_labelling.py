"""Labelling by hand: a fair seeded order, blind to the judges, every label stored at once, reopened intact."""

from __future__ import annotations

from collections import Counter

import pytest
from typer.testing import CliRunner

from testbed.cli import app as cli
from testbed.replay.app import ReplayApp
from testbed.replay.catalog import RunCatalog
from testbed.replay.label_screen import LabelScreen
from testbed.replay.labelling import LabellingSession, annotator, stratified_order
from testbed.store import Store
from testbed.store.labels import latest_labels
from testbed.transcript import USER

from conftest import plain

SIZE = (120, 40)


def context_text(app) -> str:
    return plain(app.screen.query_one("#context")) + plain(app.screen.query_one("#user-turn"))


async def test_five_labels_survive_quitting_and_reopening_and_agree_reads_them(replay_copy):
    path, run_id = replay_copy
    app = ReplayApp(Store(path), run_id, annotator="alice", seed=3)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        assert isinstance(screen, LabelScreen)
        total = screen.session.total
        assert total == 21 and "0 of 21 labelled" in plain(screen.query_one("#progress"))
        first = screen.turn
        text = context_text(app)
        assert first.user_turn in text and first.answer[:30] in text and "second judge says" not in text, "judges hidden"
        await pilot.press("3")
        revealed = plain(screen.query_one("#last"))
        assert "echo_assistant" in revealed and "second judge says" in revealed, "after labelling, the judges are shown"
        await pilot.press("1", "1", "2", "8")
        assert screen.session.done == 5
        await pilot.press("q")
    stored = latest_labels(Store(path, readonly=True), run_id, annotator("alice"))
    assert len(stored) == 5 and Counter(r.label for r in stored) == Counter(
        ["echo_assistant", "genuine_followup", "genuine_followup", "restate_question", "other"])
    assert next(r for r in stored if (r.episode_id, r.turn_index) == (first.episode_id, first.turn_index)).label == "echo_assistant"
    again = ReplayApp(Store(path), run_id, annotator="alice", seed=3)
    async with again.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert again.screen.session.done == 5 and "5 of 21 labelled" in plain(again.screen.query_one("#progress"))
        assert again.screen.position == 5, "the same seed resumes at the first turn not yet labelled"
    result = CliRunner().invoke(cli, ["agree", run_id, "--a", "local", "--b", "human:alice", "--store", str(path)])
    assert result.exit_code == 0, result.output
    assert "on 5 turns labelled by both" in result.output and "Cohen's κ" in result.output


async def test_undo_skip_and_note(replay_copy):
    path, run_id = replay_copy
    app = ReplayApp(Store(path), run_id, annotator="bob")
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        first = screen.turn
        await pilot.press("n", *"too short to tell", "enter", "7")
        assert screen.session.label_of(first) == ("short_filler", "too short to tell")
        await pilot.press("u")
        assert screen.turn == first and screen.session.label_of(first) is None and screen.session.done == 0
        await pilot.press("k")
        assert screen.turn != first
        skipped_to = screen.turn
        await pilot.press("1")
        assert screen.session.label_of(skipped_to) == ("genuine_followup", "")
        await pilot.press("u", "u")
    rows = latest_labels(Store(path, readonly=True), run_id, annotator("bob"))
    assert {r.status for r in rows} == {"unscored"}, "undo appends a withdrawal; the newest row counts"
    result = CliRunner().invoke(cli, ["agree", run_id, "--a", "local", "--b", "human:bob", "--store", str(path)])
    assert "on 0 turns" in result.output


def test_the_order_is_seeded_and_every_prefix_is_stratified():
    strata = {(f"e{i}", t): ("a" if i < 60 else "b",) for i in range(80) for t in (2, 4, 6)}
    order = stratified_order(strata, seed=7)
    assert sorted(order) == sorted(strata) and order == stratified_order(strata, seed=7)
    assert order != stratified_order(strata, seed=8)
    for n in (4, 20, 100):
        share = sum(strata[turn] == ("a",) for turn in order[:n]) / n
        assert abs(share - 0.75) <= 1 / n + 1e-9, f"first {n}: {share:.2f} of stratum a, not 0.75"


def test_the_session_orders_the_runs_judged_turns(replay_store):
    path, run_id = replay_store
    store = Store(path, readonly=True)
    session = LabellingSession.open(store, RunCatalog.load(store, run_id), "carol", seed=0)
    assert sorted((t.episode_id, t.turn_index) for t in session.order) == sorted((t.episode_id, t.turn_index) for t in store.turns(run_id))
    temperatures = {e.key.episode_id: e.key.temperature for e in store.episodes(run_id)}
    first_four = [temperatures[t.episode_id] for t in session.order[:4]]
    assert sorted(first_four) == [0.0, 0.0, 0.7, 0.7], "both temperatures in about their share from the start"


@pytest.mark.parametrize("name", ["", "  ", "a:b", "x@y"])
def test_bad_annotator_names(name):
    with pytest.raises(ValueError, match="annotator name"):
        annotator(name)


def test_two_people_and_a_judge_give_fleiss_kappa(replay_copy):
    path, run_id = replay_copy
    store = Store(path)
    catalog = RunCatalog.load(store, run_id)
    for name, label in (("ann", "genuine_followup"), ("ben", "echo_assistant")):
        session = LabellingSession.open(store, catalog, name, seed=1)
        for turn in session.order[:6]:
            session.label(turn, label)
    store.close()
    result = CliRunner().invoke(cli, ["agree", run_id, "--a", "human:ann", "--b", "human:ben", "--c", "local", "--store", str(path)])
    assert result.exit_code == 0, result.output
    assert "on 6 turns labelled by both" in result.output and "Fleiss' κ over 3 annotators (labels)" in result.output


def test_the_turns_a_judge_was_least_sure_of_come_first():
    from testbed.replay.labelling import uncertain_first

    order = [("a", 1), ("b", 1), ("c", 1), ("d", 1)]
    doubt = {("c", 1): 0.01, ("a", 1): 0.3, ("d", 1): 0.2}
    assert uncertain_first(order, doubt) == [("c", 1), ("d", 1), ("a", 1), ("b", 1)]


def test_the_queue_puts_a_near_tie_between_two_labels_first_even_when_the_followup_decision_is_clear(replay_copy):
    """The learned judge's margin is the smaller of its two decisions: a verdict torn between two
    labels is unsure even when P(follow-up) is far from the threshold, so it comes before one that
    is sure of both; a verdict whose stored raw holds no probability keeps its stratified place."""
    import json

    from testbed.judges.turns import label_row
    from testbed.judges.verdict import Verdict
    from testbed.store.labels import JudgeIdentity, write_labels

    path, run_id = replay_copy
    store = Store(path)
    keys = [(t.episode_id, t.turn_index) for t in store.turns(run_id)]
    sure = {"echo_assistant": 0.9, "degenerate": 0.05, "genuine_followup": 0.05}
    torn = {"echo_assistant": 0.46, "degenerate": 0.44, "genuine_followup": 0.10}
    near_threshold = {"echo_assistant": 0.6, "degenerate": 0.15, "genuine_followup": 0.25}

    def verdict(probabilities):
        raw = json.dumps({"p_followup": probabilities["genuine_followup"], "threshold": 0.225, "probabilities": probabilities})
        return Verdict(label="echo_assistant", followup=probabilities["genuine_followup"] >= 0.225, reason="r", raw=raw)

    chosen = {keys[5]: torn, keys[9]: near_threshold}
    learned = JudgeIdentity("learned", "learned-2+test", "")
    write_labels(store, run_id, learned, [label_row(*key, verdict(chosen.get(key, sure))) for key in keys[:12]])
    plain_order = [(t.episode_id, t.turn_index) for t in LabellingSession.open(store, RunCatalog.load(store, run_id), "dana").order]
    session = LabellingSession.open(store, RunCatalog.load(store, run_id), "dana", doubt_of=learned)
    got = [(t.episode_id, t.turn_index) for t in session.order]
    assert got[:2] == [keys[9], keys[5]], "P(right) 0.25 (a follow-up just over its threshold) before 0.46 (a torn label)"
    judged = set(keys[:12])
    assert got[2:12] == [k for k in plain_order if k in judged and k not in chosen], "equally sure verdicts keep their order"
    assert got[12:] == [k for k in plain_order if k not in judged], "turns without a learned verdict follow, in the fair order"


async def test_a_later_turn_is_shown_with_the_conversation_before_it(replay_copy):
    path, run_id = replay_copy
    app = ReplayApp(Store(path), run_id, annotator="carol", seed=3)
    async with app.run_test(size=SIZE) as pilot:
        screen = app.screen
        while screen.turn is not None and not screen.turn.context:
            await pilot.press("k")
        turn = screen.turn
        assert turn is not None and turn.context, "the dialogue run has later turns"
        text = plain(screen.query_one("#context"))
        earlier_user = next(e.text for e in turn.context if e.role == USER)
        assert "earlier" in text and earlier_user[:30] in text, "the person reads the conversation the judges read"
        assert text.index("the request") < text.index("earlier") < text.index("the answer the user saw")
