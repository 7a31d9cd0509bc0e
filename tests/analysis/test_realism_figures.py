"""The realism figures and the real users' line on the follow-up figure, from a scripted probe over synthetic real
contexts labelled by the rule judge: one row per simulated condition, the real users first, the PNGs drawn."""

from __future__ import annotations

import pandas as pd
import pytest

from helpers import REPO, write_yaml
from synthetic_chats import chats_file, conversation  # noqa: F401
from testbed.analysis.figure_data import figure_data
from testbed.analysis.figure_drawing import write_figures
from testbed.analysis.figure_registry import FigureInputs
from testbed.analysis.realism_figures import NO_REFERENCE, REAL_USERS, realism_conditions, realism_labels
from testbed.analysis.realism_runs import realism_turns
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.frames import episodes_df
from testbed.store.labels import resolve_identity

CONDITIONS = ["u-model · instructed · T=0", "u-model · instructed · T=1", "u-model · raw · T=0", "u-model · raw · T=1"]


def _reply(request) -> str:
    """Raw users thank and stop; instructed users ask for code: two label mixes far from the real users' mix."""
    system = " ".join(m["content"] for m in request.messages if m["role"] == "system")
    return "can you show that in code?" if system else "thanks"


@pytest.fixture
async def judged_run(tmp_path, chats_file, store):  # noqa: F811
    chats_file([conversation(k) for k in range(12)])
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
    assert (frame.auc > 0.8).all(), "one fixed reply against six different real ones is easy to tell apart"
    assert ((frame.jsd_lo <= frame.jsd) & (frame.jsd <= frame.jsd_hi)).all() and (frame.jsd > 0.1).all()
    by_mode = frame.groupby("user_mode").jsd.agg(["min", "max"])
    assert (by_mode["max"] - by_mode["min"] < 1e-9).all(), "the two temperatures of a mode wrote the same turns"


async def test_realism_labels_put_the_real_users_first_with_their_own_mix(judged_run, store):
    run_id, judge = judged_run
    frame = _by_name(store, run_id, judge)["realism-labels"].frame
    assert list(frame.condition) == [REAL_USERS, *CONDITIONS]
    assert list(frame.labelled) == [12, 12, 12, 12, 12]
    shares = frame.filter(like="share_")
    assert (shares.sum(axis=1) - 1.0).abs().max() < 1e-9
    turns = realism_turns(store, run_id, judge)
    real = turns[turns.source == "real"].label.value_counts(normalize=True)
    for label, share in real.items():
        assert frame[f"share_{label}"].iloc[0] == pytest.approx(share)
    assert (shares.iloc[1:].max(axis=1) == 1.0).all(), "each condition repeats one reply, so one label"
    assert shares.iloc[0].max() < 1.0, "the real replies are not all of one label"


async def test_followup_figure_keeps_real_users_out_of_the_curves_and_draws_their_rate(judged_run, store, tmp_path):
    run_id, judge = judged_run
    frame = _by_name(store, run_id, judge)["followup_vs_temperature"].frame
    assert "human" not in set(frame.user_mode) and set(frame.temperature) == {0.0, 1.0}
    turns = realism_turns(store, run_id, judge)
    real = turns[turns.source == "real"]
    assert set(frame.real_users_scored) == {12}
    expected = real.followup.astype(bool).mean()
    assert 0 < expected < 1
    assert (frame.real_users_followup_rate - expected).abs().max() < 1e-12
    assert (frame.real_users_followup_lo < expected).all() and (frame.real_users_followup_hi > expected).all()
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
