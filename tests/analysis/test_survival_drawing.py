"""The survival curves are drawn by one function, whether `testbed plot` or `testbed graph` asks for them."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.image import imread

from testbed.analysis.figures import drawing as figure_drawing
from testbed.analysis.figures import graph_drawing
from testbed.analysis.figures import survival_drawing
from testbed.analysis.drift import drift_onsets, survival_curve
from testbed.analysis.figures.data import FigureData


def curves() -> dict[str, pd.DataFrame]:
    turns = pd.DataFrame({"episode_id": ["a", "a", "b", "c", "c", "c"], "turn_index": [2, 4, 2, 2, 4, 6]})
    labels = turns.assign(status="scored", label=["genuine_followup", "meta_planning", "genuine_followup",
                                                  "genuine_followup", "genuine_followup", "genuine_followup"])
    onsets = drift_onsets(labels, turns)
    return {"user-x": survival_curve(onsets.iloc[:2], 3), "user-y": survival_curve(onsets.iloc[2:], 3)}


def test_graph_draws_the_same_function():
    assert graph_drawing.draw_survival is survival_drawing.draw_survival


def test_the_plot_figure_draws_its_curves_through_it(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(figure_drawing, "draw_survival", lambda *args, **kw: calls.append((args, kw)))
    frame = pd.concat([c.assign(user_model=m, episodes=int(c.at_risk.iloc[0])) for m, c in curves().items()], ignore_index=True)
    figure_drawing.draw(FigureData("survival", frame, "title"), tmp_path / "s.png")
    [(args, kw)] = calls
    assert list(args[0]) == ["user-x", "user-y"] and args[1:] == (tmp_path / "s.png", "title")
    assert kw == {"legend_title": "user model (ticks: censored)"}


def test_plot_and_graph_pictures_of_the_same_curves_are_pixel_identical(tmp_path):
    frame = pd.concat([c.assign(user_model=m, episodes=int(c.at_risk.iloc[0])) for m, c in curves().items()], ignore_index=True)
    figure_drawing.draw(FigureData("survival", frame, "run r · survival"), tmp_path / "plot.png")
    written = graph_drawing.draw_survival(curves(), tmp_path / "graph" / "survival.png", "run r · survival",
                                          legend_title="user model (ticks: censored)")
    assert written == tmp_path / "graph" / "survival.png", "the folder is made, as `graph` needs"
    assert np.array_equal(imread(tmp_path / "plot.png"), imread(written))
