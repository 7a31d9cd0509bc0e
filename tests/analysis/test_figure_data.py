"""The numbers behind `testbed plot`: deduplicated accuracy, follow-up rates with Wilson bounds, skip rules."""

from __future__ import annotations

import asyncio
import itertools
import math

import pytest

from testbed.analysis.figures.data import FIGURES, answer_accuracy, figure_data
from testbed.analysis.stats import wilson_interval
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.taxonomy import taxonomy
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.store.run_frames import RunFrames
from testbed.transcript import Message

JUDGE = JudgeIdentity("rules", "1")
RUN = "probe-hand"
SCORES = {("model-a", "i0"): 1.0, ("model-a", "i1"): 1.0, ("model-a", "i2"): 0.0,
          ("model-b", "i0"): 1.0, ("model-b", "i1"): 0.0, ("model-b", "i2"): 0.0}
"""The one shared answer's score per assistant model and item."""


def plan() -> list[dict]:
    """Every episode of the hand-built probe, as plain rows the expected numbers are computed from.

    model-a plays both roles (plus a few turns by other-user); model-b is answered by other-user only.
    model-a's item i2 has three samples, so counted per episode it would weigh three times as much.
    """
    rows = []
    for (model, item), score in SCORES.items():
        users = [model] if model == "model-a" else ["other-user"]
        if (model, item) == ("model-a", "i0"):
            users.append("other-user")
        samples = 3 if (model, item) == ("model-a", "i2") else 1
        variants = itertools.product(users, [0.0, 1.0], ["none", "truncation"], range(samples))
        for user, temperature, perturbation, sample in variants:
            changed = perturbation == "truncation" and temperature == 1.0
            label = None if (model, item, temperature, perturbation, user) == ("model-a", "i0", 1.0, "none", "model-a") else \
                "genuine_followup" if temperature == 0.0 else "echo_assistant" if model == "model-b" else "restate_question"
            rows.append({"model": model, "user": user, "item": item, "temperature": temperature, "perturbation": perturbation,
                         "sample": sample, "score": score, "status": "done", "label": label,
                         "text": "Where did the rest go?" if changed else f"Why is {item} so?"})
    rows.append({"model": "model-a", "user": "model-a", "item": "i1", "temperature": 1.0, "perturbation": "none", "sample": 1,
                 "score": 1.0, "status": "error", "label": None, "text": None})
    return rows


def eid(r: dict) -> str:
    return f"{r['model']}-{r['user']}-{r['item']}-{r['temperature']:g}-{r['perturbation']}-{r['sample']}"


def build(store: Store, rows: list[dict], run_id: str = RUN, kind: str = "probe") -> None:
    """Write the planned episodes, each probe answer marked as reused from its item's shared answer, and their labels."""
    store.begin_run(run_id, scenario="s", kind=kind, spec={}, fingerprint="f", versions={}, git_revision=None, planned=len(rows))
    labels = []
    for r in rows:
        key = EpisodeKey(eid(r), r["item"], "gsm8k", "a", r["model"], "u", r["user"], "instructed", r["temperature"],
                         r["sample"], r["perturbation"])
        messages = [Message("user", f"question {r['item']}", "dataset", 0),
                    Message("assistant", "The answer is 18.", "a", 1, reused_from=f"answer-{r['model']}-{r['item']}")]
        if r["status"] == "done":
            messages.append(Message("user", r["text"], "u", 2))
            verdict = Verdict(r["label"], r["label"] == "genuine_followup", "rule") if r["label"] else \
                Verdict(None, None, "", raw="?")
            labels.append(label_row(eid(r), 2, verdict))
        store.write_episode(run_id, EpisodeOutcome(key, messages, r["status"], "max_turns", None, r["score"]))
    write_labels(store, run_id, JUDGE, labels)


@pytest.fixture
def hand(store):
    build(store, plan())
    return store


def figures(store: Store, run_id: str = RUN, judge: JudgeIdentity | None = JUDGE) -> dict:
    out = figure_data(store, run_id, judge)
    assert [f.name for f in out] == list(FIGURES.names())
    return {f.name: f for f in out}


def rate(rows: list[dict]) -> tuple[int, int, float, float]:
    scored = [r for r in rows if r["status"] == "done" and r["label"]]
    hits = sum(r["label"] == "genuine_followup" for r in scored)
    return (len(scored), hits, *wilson_interval(hits, len(scored)))


def test_accuracy_counts_each_shared_answer_once(hand):
    accuracy = answer_accuracy(RunFrames(hand, RUN)).set_index("assistant_model")
    a = accuracy.loc["model-a"]
    assert (a.answers, a.correct) == (3, 2), "i2's three samples and the errored variant are one answer each"
    assert a.accuracy == pytest.approx(2 / 3)
    assert (a.accuracy_lo, a.accuracy_hi) == pytest.approx(wilson_interval(2, 3))
    assert (accuracy.loc["model-b", "answers"], accuracy.loc["model-b", "correct"]) == (3, 1)


def test_scatter_uses_the_models_own_user_turns_and_exact_wilson_bounds(hand):
    scatter = figures(hand)["accuracy_vs_followup"]
    assert scatter.skipped is None and "run probe-hand" in scatter.title and "judge rules@1" in scatter.title
    frame = scatter.frame.set_index("assistant_model")
    rows = plan()
    own_a = [r for r in rows if r["model"] == "model-a" and r["user"] == "model-a" and r["perturbation"] == "none"]
    all_b = [r for r in rows if r["model"] == "model-b" and r["perturbation"] == "none"]
    for model, chosen, self_play in (("model-a", own_a, True), ("model-b", all_b, False)):
        n, hits, lo, hi = rate(chosen)
        row = frame.loc[model]
        assert (row.scored, row.followups, bool(row.self_play)) == (n, hits, self_play)
        assert (row.followup_rate, row.followup_lo, row.followup_hi) == pytest.approx((hits / n, lo, hi))
    assert frame.loc["model-a", "user_models"] == "model-a" and frame.loc["model-b", "user_models"] == "other-user"
    assert (frame.loc["model-a", "unscored"], frame.loc["model-a", "errored_episodes"]) == (1, 1)


def test_temperature_rates_per_user_model(hand):
    temperature = figures(hand)["followup_vs_temperature"]
    assert temperature.skipped is None
    frame = temperature.frame.set_index(["user_model", "temperature"])
    for user, t in itertools.product(["model-a", "other-user"], [0.0, 1.0]):
        n, hits, lo, hi = rate([r for r in plan() if r["user"] == user and r["temperature"] == t and r["perturbation"] == "none"])
        row = frame.loc[(user, t)]
        assert (row.scored, row.followups) == (n, hits)
        assert (row.followup_lo, row.followup_hi) == pytest.approx((lo, hi))
    assert frame.loc[("model-a", 1.0), "errored_episodes"] == 1 and frame.loc[("model-a", 1.0), "unscored"] == 1


def test_temperature_figure_is_skipped_with_one_temperature(store):
    build(store, [r for r in plan() if r["temperature"] == 0.0])
    found = figures(store)
    assert found["followup_vs_temperature"].skipped.startswith("needs 2 user temperatures; this run has 1 (0)")
    assert found["followup_vs_temperature"].frame.empty


def test_perturbation_changed_share_and_paired_followups(hand):
    effects = figures(hand)["perturbation_effects"]
    assert effects.skipped is None
    frame = effects.frame.set_index("user_model")
    for user in ("model-a", "other-user"):
        truncated = [r for r in plan() if r["user"] == user and r["perturbation"] == "truncation"]
        changed = sum(r["temperature"] == 1.0 for r in truncated)
        row = frame.loc[user]
        assert (row.perturbation, row.pairs, row.changed_turns) == ("truncation", len(truncated), changed)
        expected = (changed / len(truncated), *wilson_interval(changed, len(truncated)))
        assert (row.changed, row.changed_lo, row.changed_hi) == pytest.approx(expected)
    assert frame.loc["model-a", "judged_pairs"] == frame.loc["model-a", "pairs"] - 1, "the unscored twin leaves its pair out"
    assert frame.loc["other-user", "followup_none"] == frame.loc["other-user", "followup_perturbed"] == pytest.approx(0.5)


def test_perturbation_figure_is_skipped_without_perturbations(store):
    build(store, [r for r in plan() if r["perturbation"] == "none"])
    assert figures(store)["perturbation_effects"].skipped == "the run has no perturbation other than none"


def test_failure_mode_shares_sum_to_one_in_taxonomy_order(hand):
    modes = figures(hand)["failure_modes"]
    assert modes.skipped is None
    shares = [c for c in modes.frame.columns if c.startswith("share_")]
    assert shares == [f"share_{label}" for label in taxonomy().labels]
    assert modes.frame[shares].sum(axis=1).tolist() == pytest.approx([1.0] * len(modes.frame))
    row = modes.frame.set_index("user_model").loc["other-user"]
    labelled = [r["label"] for r in plan() if r["user"] == "other-user" and r["perturbation"] == "none" and r["label"]]
    assert row.labelled == len(labelled) == 8
    for label in taxonomy().labels:
        assert row[f"count_{label}"] == labelled.count(label)
        assert row[f"share_{label}"] == pytest.approx(labelled.count(label) / 8)


def test_survival_is_skipped_for_one_user_turn_per_episode(hand):
    assert "probe episodes have one user turn" in figures(hand)["survival"].skipped


def test_survival_is_drawn_for_dialogues(store):
    store.begin_run("dialogue-hand", scenario="s", kind="dialogue", spec={}, fingerprint="f", versions={}, git_revision=None,
                    planned=3)
    labels = []
    dialogues = (("late", "user-x", ["a", "b", "c"]), ("calm", "user-x", ["a", "b"]), ("early", "user-y", ["a", "b"]))
    for name, user, texts in dialogues:
        key = EpisodeKey(name, f"item-{name}", "gsm8k", "a", "model-a", "u", user, "instructed", 0.0, 0, "none")
        messages = [Message("user", "question", "dataset", 0)]
        for text in texts:
            messages += [Message("assistant", "answer", "a", len(messages)), Message("user", text, "u", len(messages) + 1)]
        store.write_episode("dialogue-hand", EpisodeOutcome(key, messages, "done", "max_turns"))
        drift_at = {"late": 3, "early": 1}.get(name)
        labels += [label_row(name, 2 * k, Verdict("echo_assistant" if k == drift_at else "genuine_followup", k != drift_at, ""))
                   for k in range(1, len(texts) + 1)]
    write_labels(store, "dialogue-hand", JUDGE, labels)
    curves = figures(store, "dialogue-hand")["survival"]
    assert curves.skipped is None
    frame = curves.frame.set_index(["user_model", "k"])
    assert frame.loc[("user-x", 2), "survival"] == 1.0 and frame.loc[("user-x", 3), "survival"] == 0.0
    assert frame.loc[("user-y", 1), "survival"] == 0.0 and frame.loc[("user-x", 0), "episodes"] == 2


def test_without_labels_every_figure_that_needs_them_is_skipped(hand):
    needs = {f.name for f in FIGURES if f.needs_labels}
    assert "tau2-users" not in needs and "survival" in needs
    for judge in (None, JudgeIdentity("local", "9", "m")):
        found = figures(hand, judge=judge)
        assert all(f.skipped and "run `testbed judge probe-hand`" in f.skipped for name, f in found.items() if name in needs)
        assert found["tau2-users"].skipped and "testbed judge" not in found["tau2-users"].skipped
    assert "no labels from judge local@9:m" in figures(hand, judge=JudgeIdentity("local", "9", "m"))["survival"].skipped


def test_a_real_probe_run_counts_one_answer_per_item(spec_dir, store):
    scenario = load_scenario(spec_dir(perturbations=["none", "truncation"]))
    backends = {"assistant": ScriptedBackend(lambda r: "The answer is 18."), "user": ScriptedBackend(lambda r: "why?")}
    summary = asyncio.run(run_scenario(scenario, store, backends=backends, show_progress=False))
    scores = {e.key.item_id: e.task_score for e in store.episodes(summary.run_id)}
    accuracy = answer_accuracy(RunFrames(store, summary.run_id)).iloc[0]
    correct = sum(s == 1.0 for s in scores.values())
    assert accuracy.answers == len(scores) == 3 and accuracy.correct == correct
    assert (accuracy.accuracy_lo, accuracy.accuracy_hi) == pytest.approx(wilson_interval(correct, 3))
    assert len(store.episodes(summary.run_id)) == 24 and not math.isnan(accuracy.accuracy)
