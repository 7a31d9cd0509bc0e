"""`testbed plot`'s figures as typed entries: one declaration per figure gives its name, title, numbers and drawing."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

from testbed.analysis.figures import data as figure_data
from testbed.analysis.figures import drawing as figure_drawing
from testbed.analysis.figures import realism_drawing as realism_figure_drawing
from testbed.analysis.figures import realism_data as realism_figures
from testbed.analysis.tau2 import figure_drawing as tau2_figure_drawing
from testbed.analysis.tau2 import figures as tau2_figures
from testbed.registry import Registry, UnknownName
from testbed.specs.registries import FigureEntry
from testbed.store.labels import JudgeIdentity

NAMES = ("accuracy_vs_followup", "followup_vs_temperature", "perturbation_effects", "failure_modes", "survival", "tau2-users", "realism",
         "realism-labels")
BUILDERS = {"tau2-users": tau2_figures.tau2_users, "realism": realism_figures.realism_conditions,
            "realism-labels": realism_figures.realism_labels}
"""Figures whose builder lives outside figure_data (the τ² figure's, by a name that is no Python name)."""
DRAWINGS = {"tau2-users": tau2_figure_drawing, "realism": realism_figure_drawing, "realism-labels": realism_figure_drawing}


def test_the_figures_in_their_order_each_drawn_by_a_function_of_figure_drawing():
    assert figure_data.FIGURES.names() == NAMES
    for figure in figure_data.FIGURES:
        assert isinstance(figure, FigureEntry) and figure.title
        builder = BUILDERS.get(figure.name) or getattr(figure_data, figure.name)
        assert figure.build is builder, "the entry is declared beside its builder"
        drawing = figure.drawing()
        assert inspect.getmodule(drawing) is DRAWINGS.get(figure.name, figure_drawing)
        assert list(inspect.signature(drawing).parameters) == ["data", "path"]


def test_a_name_registered_twice_or_unknown_is_an_error():
    figures = Registry("figure", FigureEntry)
    figures.register("note", f"{__name__}:NOTE")
    with pytest.raises(ValueError, match="figure 'note' is already registered"):
        figures.register("note", f"{__name__}:NEVER")
    with pytest.raises(UnknownName, match="unknown figure 'two': use one of note"):
        figures.get("two")
    figures.register("never", f"{__name__}:NOTE")
    with pytest.raises(TypeError, match="declares figure 'note' but is registered as 'never'"):
        figures.entry("never")


def draw_note(data, path) -> None:
    """A stand-in drawing: the frame's first value as text."""
    path.write_bytes(str(data.frame.value.iloc[0]).encode())


SEEN = []
"""What `note` was given, per call."""


def note(inputs):
    """A figure of one number, built from whatever the run holds."""
    SEEN.append((inputs.run_id, inputs.judge, len(inputs.turns) > 0))
    return pd.DataFrame({"value": [42]}), None


def never(inputs):
    """A figure this run can never draw."""
    return pd.DataFrame({"value": [0]}), "not for this run"


NOTE = FigureEntry("note", "A note", note, f"{__name__}:draw_note")
NEVER = FigureEntry("never", "Never drawn", never, f"{__name__}:draw_note")


def test_adding_a_figure_is_one_entry_and_one_registration(hand, tmp_path, monkeypatch):
    figures = Registry("figure", FigureEntry)
    figures.register("note", f"{__name__}:NOTE")
    figures.register("never", f"{__name__}:NEVER")
    SEEN.clear()
    monkeypatch.setattr(figure_data, "FIGURES", figures)
    monkeypatch.setattr(figure_drawing, "FIGURES", figures)
    judge = JudgeIdentity("rules", "1")
    result = figure_drawing.write_figures(hand, "probe-hand", judge, tmp_path / "out")
    assert [p.name for p in result.written] == ["note.png"] and result.skipped == [("never", "not for this run")]
    assert (tmp_path / "out" / "note.png").read_text() == "42" and (tmp_path / "out" / "note.csv").read_text() == "value\n42\n"
    assert SEEN == [("probe-hand", judge, True)]
    [data, _] = figure_data.figure_data(hand, "probe-hand", judge)
    assert data.title == "A note — run probe-hand — judge rules@1"


@pytest.fixture
def hand(store):
    from test_figure_data import build, plan

    build(store, plan())
    return store
