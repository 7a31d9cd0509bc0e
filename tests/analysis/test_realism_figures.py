"""The realism figures and the real users' line on the follow-up figure, from a scripted probe over synthetic real
contexts labelled by the rule judge: one row per simulated condition, the real users first, the PNGs drawn."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from helpers import REPO, write_yaml
from synthetic_chats import ANSWERS, QUESTIONS, REPLIES, chats_file  # noqa: F401
from testbed.analysis.figures.data import figure_data
from testbed.analysis.figures.drawing import write_figures
from testbed.analysis.figures.registry import FigureInputs
from testbed.analysis.figures.realism_data import NO_REFERENCE, REAL_USERS, realism_conditions, realism_labels
from testbed.analysis.stats import wilson_interval
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.frames import episodes_df
from testbed.store.labels import resolve_identity

CONDITIONS = ["u-model · instructed · T=0", "u-model · instructed · T=1", "u-model · raw · T=0", "u-model · raw · T=1"]


def _real_reply(k: int) -> str:
    """Conversation k's real next turn, as the rule judge labels it: k % 3 == 0 a genuine follow-up on the answer,
    k % 3 == 1 a new question (k % 6 == 1) or "ok thanks" (k % 6 == 4), k % 3 == 2 a bare thanks."""
    if k % 3 == 0:
        return "Can you explain more about " + " ".join(ANSWERS[k % 6].split()[-3:]).rstrip(".") + "?"
    return REPLIES[k % 6] if k % 3 == 1 else "thanks"


REAL_MIX = {"genuine_followup": 4 / 12, "new_question": 2 / 12, "short_filler": 6 / 12}
"""The label mix of the twelve real replies of `_real_reply`."""


def _jsd_from_one_label(label: str) -> float:
    """Jensen–Shannon divergence (bits) between `REAL_MIX` and a mix of `label` alone, worked out by hand."""
    labels = sorted(set(REAL_MIX) | {label})
    p = [REAL_MIX.get(x, 0.0) for x in labels]
    q = [1.0 if x == label else 0.0 for x in labels]
    m = [(a + b) / 2 for a, b in zip(p, q)]
    kl = lambda a, b: sum(x * math.log2(x / y) for x, y in zip(a, b) if x > 0)  # noqa: E731
    return (kl(p, m) + kl(q, m)) / 2


def _chat(k: int) -> dict:
    return {"id": f"conv{k}", "conversations": [{"from": "human", "value": QUESTIONS[k % 6]},
                                                 {"from": "gpt", "value": ANSWERS[k % 6]},
                                                 {"from": "human", "value": _real_reply(k)}]}


def _reply(request) -> str:
    """Raw users thank and stop; instructed users ask for code: two label mixes far from the real users' mix."""
    return "thanks" if request.continue_final_message else "can you show that in code?"


@pytest.fixture
async def judged_run(tmp_path, chats_file, store):  # noqa: F811
    chats_file([_chat(k) for k in range(12)])
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-instructed.md").read_text())
    write_yaml(tmp_path / "scripted.yaml", {"name": "s", "backend": "scripted", "model": "u-model", "outputs": ["x"],
                                            "concurrency": 1})
    spec = load_scenario(write_yaml(tmp_path / "real.yaml", {
        "kind": "probe", "name": "real", "dataset": "sharegpt", "items": {"limit": 12}, "assistant": "scripted.yaml",
        "user": "scripted.yaml", "user_modes": ["raw", "instructed"], "user_prompt_file": "prompts/user.md",
        "temperatures": [0.0, 1.0], "max_tokens": 16}))
    summary = await run_scenario(spec, store, backends={"assistant": ScriptedBackend(lambda r: "x"),
                                                       "user": ScriptedBackend(_reply)}, show_progress=False)
    assert summary.errors == 0
    await judge_run(store, summary.run_id, load_judge("local"), show_progress=False)
    return summary.run_id, resolve_identity(store, summary.run_id, "local")


def _by_name(store, run_id, judge):
    return {d.name: d for d in figure_data(store, run_id, judge)}


async def test_realism_figure_has_one_row_per_condition_with_intervals(judged_run, store):
    run_id, judge = judged_run
    data = _by_name(store, run_id, judge)["realism"]
    assert data.skipped is None
    frame = data.frame
    assert list(frame.condition) == CONDITIONS
    assert set(frame.contexts) == {12} and not frame.weak_reference.any()
    assert ((frame.auc_lo <= frame.auc) & (frame.auc <= frame.auc_hi)).all()
    assert (frame.auc > 0.7).all(), "one fixed reply against varied real ones is easy to tell apart"
    assert ((frame.jsd_lo <= frame.jsd) & (frame.jsd <= frame.jsd_hi)).all()
    by_mode = frame.set_index("condition").jsd
    for mode, label in (("raw", "short_filler"), ("instructed", "new_question")):
        assert by_mode[f"u-model · {mode} · T=0"] == pytest.approx(_jsd_from_one_label(label))
        assert by_mode[f"u-model · {mode} · T=1"] == pytest.approx(_jsd_from_one_label(label))


async def test_realism_labels_put_the_real_users_first_with_their_own_mix(judged_run, store):
    run_id, judge = judged_run
    frame = _by_name(store, run_id, judge)["realism-labels"].frame
    assert list(frame.condition) == [REAL_USERS, *CONDITIONS]
    assert list(frame.labelled) == [12, 12, 12, 12, 12]
    shares = frame.filter(like="share_")
    assert (shares.sum(axis=1) - 1.0).abs().max() < 1e-9
    real = shares.iloc[0]
    assert real[real > 0].to_dict() == {f"share_{label}": pytest.approx(v) for label, v in REAL_MIX.items()}
    sims = frame.set_index("condition").iloc[1:]
    assert set(sims.share_short_filler[sims.user_mode == "raw"]) == {1.0}, "raw users only say thanks"
    assert set(sims.share_new_question[sims.user_mode == "instructed"]) == {1.0}, "instructed users ask for code"


async def test_followup_figure_keeps_real_users_out_of_the_curves_and_draws_their_rate(judged_run, store, tmp_path):
    run_id, judge = judged_run
    frame = _by_name(store, run_id, judge)["followup_vs_temperature"].frame
    assert "human" not in set(frame.user_mode) and set(frame.temperature) == {0.0, 1.0}
    assert set(frame.real_users_scored) == {12} and set(frame.followup_rate) == {0.0}
    lo, hi = wilson_interval(4, 12)
    assert (frame.real_users_followup_rate - 4 / 12).abs().max() < 1e-12
    assert set(frame.real_users_followup_lo) == {lo} and set(frame.real_users_followup_hi) == {hi}
    result = write_figures(store, run_id, judge, tmp_path / "plots")
    names = {p.stem for p in result.written}
    assert {"realism", "realism-labels", "followup_vs_temperature"} <= names
    for name in ("realism", "realism-labels", "followup_vs_temperature"):
        png = tmp_path / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_a_run_without_human_references_skips_both_realism_figures(store):
    store.begin_run("plain", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=0)
    inputs = FigureInputs(store, "plain", None, pd.DataFrame(), episodes_df(store, "plain", exact=True))
    for build in (realism_conditions, realism_labels):
        frame, reason = build(inputs)
        assert frame.empty and reason == NO_REFERENCE


def test_a_weak_reference_is_said_in_the_title(monkeypatch, tmp_path):
    from testbed.analysis.figures import realism_drawing as drawing
    from testbed.analysis.figures.data import FigureData

    titles = []
    monkeypatch.setattr(drawing, "heading", lambda fig, title: titles.append(title))
    row = {"condition": "m · raw · T=0", "user_model": "m", "user_mode": "raw", "temperature": 0.0, "contexts": 6,
           "simulated": 6, "real": 6, "auc": 0.6, "auc_lo": 0.5, "auc_hi": 0.7, "jsd": 0.1, "jsd_lo": 0.05, "jsd_hi": 0.2}
    for weak in (False, True):
        frame = pd.DataFrame([{**row, "weak_reference": weak}])
        drawing.draw_realism(FigureData("realism", frame, "Realism — run r"), tmp_path / f"weak-{weak}.png")
    assert titles == ["Realism — run r", "Realism — run r" + drawing.WEAK_NOTE]
    assert (tmp_path / "weak-True.png").stat().st_size > 0
