"""Paired perturbation effects on a scripted probe run."""

from __future__ import annotations

import pytest

from testbed.analysis.perturbation import perturbation_effects
from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.scenarios.perturbations import EXPLICIT_QUESTION
from testbed.specs.loader import load_scenario


async def test_changed_share_and_followup_change_per_perturbation(spec_dir, store):
    scenario = load_scenario(spec_dir(perturbations=["none", "truncation", "explicit_question"], user_modes=["raw"], temperatures=[0.0]))

    def user(request):
        shown = request.messages[-2]["content"]
        return "Why did you stop there?" if EXPLICIT_QUESTION in shown else "Same question again."

    answers = ScriptedBackend(lambda r: "The total is 0.15 times 80, which gives twelve in the end.")
    run = await run_scenario(scenario, store, backends={"assistant": answers, "user": ScriptedBackend(user)}, show_progress=False)
    judged = await judge_run(store, run.run_id, load_judge("followup"), show_progress=False,
                             backend=ScriptedBackend(lambda r: '{"followup": %s, "reason": "x"}' % ("true" if "Why did you" in r.messages[0]["content"] else "false")))
    effects = perturbation_effects(store, run.run_id, judged.identity).set_index("perturbation")
    assert set(effects.index) == {"truncation", "explicit_question"}
    assert effects.loc["explicit_question", "pairs"] == 3 and effects.loc["explicit_question", "changed"] == 1.0
    assert effects.loc["explicit_question", "followup_change"] == pytest.approx(1.0)
    assert effects.loc["truncation", "changed"] == 0.0 and effects.loc["truncation", "followup_change"] == 0.0


async def test_no_perturbations_no_rows(spec_dir, store):
    scenario = load_scenario(spec_dir())
    run = await run_scenario(scenario, store, backends={"assistant": ScriptedBackend(lambda r: "4"), "user": ScriptedBackend(lambda r: "ok")},
                             show_progress=False)
    assert perturbation_effects(store, run.run_id, None).empty


async def test_report_table_shows_the_perturbation_table(spec_dir, store):
    from typer.testing import CliRunner

    from testbed.cli import app

    scenario = load_scenario(spec_dir(perturbations=["none", "truncation"], user_modes=["raw"], temperatures=[0.0]))
    run = await run_scenario(scenario, store, backends={"assistant": ScriptedBackend(lambda r: "four is the answer here"),
                                                        "user": ScriptedBackend(lambda r: r.messages[-2]["content"])}, show_progress=False)
    await judge_run(store, run.run_id, load_judge("local"), show_progress=False)
    out = CliRunner().invoke(app, ["report", run.run_id, "--store", str(store.path)], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    assert "perturbations: the same answer, perturbed" in out.output and "100.0% (44%–100%)" in out.output
