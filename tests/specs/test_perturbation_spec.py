"""Perturbations with parameters: labels, what the user sees, and ids that stay as they were."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from testbed.specs.perturbation import EXPLICIT_QUESTION, PerturbationSpec, perturbation_specs
from testbed.specs.scenario import ProbeScenarioSpec

ANSWER = "First add three and four to get seven, then double it to get fourteen, so the answer is 14."


def test_default_parameters_keep_the_bare_name_label_identity_and_dump():
    for entry in ("truncation", {"kind": "truncation", "fraction": 0.5}, {"kind": "explicit_question", "text": EXPLICIT_QUESTION}):
        spec = PerturbationSpec.model_validate(entry)
        assert spec.resolved_label == spec.kind and spec.identity() == spec.kind
    assert PerturbationSpec.model_validate("none").model_dump() == "none"


def test_parameters_give_their_own_labels_and_shape_what_the_user_sees():
    quarter = PerturbationSpec(kind="truncation", fraction=0.25)
    assert quarter.resolved_label == "truncation@0.25"
    shown = quarter.apply(ANSWER)
    assert ANSWER.startswith(shown) and len(shown) <= len(ANSWER) * 0.25 and not shown.endswith(" ")
    assert len(PerturbationSpec(kind="truncation", fraction=0.75).apply(ANSWER)) > len(PerturbationSpec(kind="truncation").apply(ANSWER))
    asked = PerturbationSpec(kind="explicit_question", text="Does that make sense?")
    assert asked.resolved_label == "explicit_question:does-that-make-sense"
    assert asked.apply(ANSWER) == ANSWER + "\n\nDoes that make sense?"
    assert PerturbationSpec(kind="explicit_question", text="Any doubts?", label="doubts").resolved_label == "doubts"
    assert quarter.identity() != PerturbationSpec(kind="truncation", fraction=0.3).identity()


def test_texts_expand_into_one_perturbation_each_and_labels_must_differ():
    specs = perturbation_specs(["none", {"kind": "explicit_question", "texts": ["Clear?", "Any questions left?"]}])
    assert [p.resolved_label for p in specs] == ["none", "explicit_question:clear", "explicit_question:any-questions-left"]
    with pytest.raises(ValueError, match="labels repeat: truncation"):
        perturbation_specs(["truncation", {"kind": "truncation", "fraction": 0.5}])


@pytest.mark.parametrize("entry", [
    {"kind": "none", "fraction": 0.5}, {"kind": "truncation", "fraction": 1.0}, {"kind": "truncation", "text": "x"},
    {"kind": "explicit_question", "text": "a", "texts": ["b"]}, {"kind": "shuffle"}, {"kind": "truncation", "label": "bad label"},
])
def test_bad_parameters_are_refused(entry):
    with pytest.raises(ValidationError):
        PerturbationSpec.model_validate(entry)


def test_a_probe_spec_accepts_names_and_mappings():
    spec = ProbeScenarioSpec.model_validate({"kind": "probe", "name": "p", "dataset": "gsm8k", "assistant": "a", "user": "u",
                                             "perturbations": ["none", {"kind": "truncation", "fraction": 0.3}]})
    assert spec.model_dump(mode="json")["perturbations"] == ["none", {"kind": "truncation", "fraction": 0.3, "text": None,
                                                                      "texts": None, "label": None}]
