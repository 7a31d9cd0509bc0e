"""The fault-lab benchmark end to end on the mock domain: the rules' known answers come out of its tables (every
planted premature stop flagged, no near miss flagged), and a whole-conversation reviewer (a scripted one that finds
no error) is scored the same way, per τ² tag, with its misses counted."""

from __future__ import annotations

import sys

from helpers import REPO, write_yaml
from testbed.backends.scripted import ScriptedBackend

sys.path.insert(0, str(REPO / "benchmarks"))

import fault_lab  # noqa: E402


def test_the_lab_scores_the_rules_and_a_reviewer_on_the_mock_domain(tmp_path):
    reviewer = write_yaml(tmp_path / "reviewer.yaml", {"name": "reviewer", "backend": "scripted", "model": "rev", "outputs": ["x"]})
    silent = ScriptedBackend(lambda request: '{"errors": [], "summary": "no error"}')
    out = fault_lab.lab(0, 1, ("mock",), tmp_path / "lab.sqlite", reviewer, silent)
    rules = {(r["target"], r["domain"]): r for r in out["by_rule"]}
    stop = rules[("premature_stop", "all")]
    assert stop["tp"] > 0 and stop["fn"] == 0 and stop["fp"] == 0
    assert all(r["flagged"] == 0 for r in out["near_misses"] if r["tempts"] != "role_drift")
    assert out["clean"]["episodes"] == len(fault_lab.chosen_tasks("mock", 1, 0))
    review = {r["target"]: r for r in out["reviewer"]["by_tag"] if r["domain"] == "all"}
    assert review["premature_termination"]["tp"] == 0 and 0 < review["premature_termination"]["fn"] <= stop["tp"]
    assert out["reviewer"]["clean"]["flags"] == 0 and out["reviewer"]["unscored_episodes"] == 0
    assert out["reviewer"]["not_reviewed_episodes"] == out["errored"], "τ²'s evaluator failures are not finished episodes"
    table = fault_lab.markdown(out)
    assert "| premature_stop | all |" in table and "reviewer user-review" in table


def test_the_table_prints_without_a_reviewer(tmp_path):
    out = fault_lab.lab(0, 1, ("mock",), tmp_path / "lab.sqlite")
    assert "reviewer" not in out and "| premature_stop | all |" in fault_lab.markdown(out)
