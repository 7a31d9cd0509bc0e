"""Training-data export on a scripted probe run: SFT rows, the DPO pairing rule, filters, canaries, round trip."""

from __future__ import annotations

import asyncio
import itertools
import json

import datasets
import pytest
from typer.testing import CliRunner

from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app as cli
from testbed.export.training import ExportError, ExportFilter, training_rows
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store import EpisodeKey, EpisodeOutcome, Store
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.transcript import Message

JUDGE = JudgeIdentity("rules", "1")
LABEL_OF = {("instructed", 0.0): "genuine_followup", ("instructed", 1.0): "echo_assistant",
            ("raw", 0.0): "genuine_followup", ("raw", 1.0): "degenerate"}
"""The label the test judge gives each probe variant: per item and mode, one follow-up and one failure."""


@pytest.fixture
def probe_run(spec_dir, tmp_path):
    """A probe run (3 items x 2 user modes x 2 temperatures, one shared answer per item) labelled by `rules@1`."""
    store = Store(tmp_path / "s.sqlite")
    counter = itertools.count()
    answer = ScriptedBackend(lambda r: "Add the two numbers, then halve the sum: the answer is 12.")
    user = ScriptedBackend(lambda r: f"Why halve it? (reply {next(counter)}, T={r.temperature:g})")
    summary = asyncio.run(run_scenario(load_scenario(spec_dir()), store, backends={"assistant": answer, "user": user},
                                       show_progress=False))
    keys = {e.key.episode_id: e.key for e in store.episodes(summary.run_id)}
    rows = []
    for t in store.turns(summary.run_id):
        label = LABEL_OF[(keys[t.episode_id].user_mode, keys[t.episode_id].temperature)]
        rows.append(label_row(t.episode_id, t.turn_index, Verdict(label, label == "genuine_followup", "rule")))
    write_labels(store, summary.run_id, JUDGE, rows)
    yield store, summary.run_id
    store.close()


def stored_user_turns(store: Store, run_id: str) -> set[str]:
    return {t.user_turn for t in store.turns(run_id)}


def test_sft_rows_end_in_a_real_positive_turn(probe_run):
    store, run_id = probe_run
    result = training_rows(store, run_id, "sft", JUDGE)
    assert result.counts == {"judged_turns": 12, "positive_turns": 6, "failure_turns": 6, "rows": 6}
    real = stored_user_turns(store, run_id)
    for row in result.rows:
        roles = [m["role"] for m in row["messages"]]
        assert roles == ["user", "assistant", "user"] and "system" not in roles
        assert row["messages"][-1]["content"] in real and row["label"] == "genuine_followup" and row["temperature"] == 0.0
        assert row["messages"][1]["content"] == "Add the two numbers, then halve the sum: the answer is 12."


def test_dpo_pairs_share_the_context_and_user_mode_and_use_each_turn_once(probe_run):
    store, run_id = probe_run
    result = training_rows(store, run_id, "dpo", JUDGE)
    assert len(result.rows) == 6, "one pair per item and user mode"
    seen = []
    for row in result.rows:
        good, bad = row["chosen_meta"], row["rejected_meta"]
        assert good["item_id"] == bad["item_id"] and good["user_mode"] == bad["user_mode"]
        assert good["episode_id"] != bad["episode_id"] and good["label"] == "genuine_followup" and bad["label"] != "genuine_followup"
        assert [m["role"] for m in row["prompt"]] == ["user", "assistant"]
        assert row["chosen"][0]["content"] != row["rejected"][0]["content"]
        seen += [(good["episode_id"], good["turn_index"]), (bad["episode_id"], bad["turn_index"])]
    assert len(seen) == len(set(seen))


def test_filters_narrow_the_rows(probe_run):
    store, run_id = probe_run
    only_instructed = ExportFilter(where=(("user_mode", "instructed"),))
    assert len(training_rows(store, run_id, "dpo", JUDGE, only_instructed).rows) == 3
    echo_only = ExportFilter(failures=("echo_assistant",))
    assert {r["rejected_meta"]["label"] for r in training_rows(store, run_id, "dpo", JUDGE, echo_only).rows} == {"echo_assistant"}
    assert len(training_rows(store, run_id, "sft", JUDGE, ExportFilter(positive=("degenerate",))).rows) == 3
    assert training_rows(store, run_id, "sft", JUDGE, ExportFilter(user_model="nobody")).rows == []


def test_an_unscored_newer_verdict_removes_a_turn(probe_run):
    store, run_id = probe_run
    first = training_rows(store, run_id, "sft", JUDGE).rows[0]
    write_labels(store, run_id, JUDGE, [label_row(first["episode_id"], first["turn_index"], Verdict(None, None, "", raw="garbled"))])
    assert len(training_rows(store, run_id, "sft", JUDGE).rows) == 5


@pytest.mark.parametrize("chosen, problem", [
    (ExportFilter(positive=("nice",)), "unknown label 'nice'"),
    (ExportFilter(where=(("colour", "red"),)), "unknown --where column 'colour'"),
    (ExportFilter(failures=("genuine_followup",)), "both positive and failure"),
])
def test_bad_filters_are_refused(probe_run, chosen, problem):
    store, run_id = probe_run
    with pytest.raises(ExportError, match=problem):
        training_rows(store, run_id, "sft", JUDGE, chosen)


def test_canary_datasets_need_the_flag(tmp_path):
    store = Store(tmp_path / "c.sqlite")
    store.begin_run("r", scenario="s", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    key = EpisodeKey("e1", "i1", "gpqa_diamond", "a", "am", "u", "um", "instructed", 0.0, 0, "none")
    messages = [Message("user", "made-up question", "dataset", 0), Message("assistant", "made-up answer", "a", 1),
                Message("user", "why?", "u", 2)]
    store.write_episode("r", EpisodeOutcome(key, messages, "done", "max_turns"))
    write_labels(store, "r", JUDGE, [label_row("e1", 2, Verdict("genuine_followup", True, ""))])
    with pytest.raises(ExportError, match="canary"):
        training_rows(store, "r", "sft", JUDGE)
    assert len(training_rows(store, "r", "sft", JUDGE, ExportFilter(include_canary=True)).rows) == 1


def test_cli_writes_jsonl_that_datasets_loads_and_a_card(probe_run, tmp_path):
    store, run_id = probe_run
    out = tmp_path / "data"
    runner = CliRunner()
    for kind, rows in (("sft", 6), ("dpo", 6)):
        result = runner.invoke(cli, ["export", run_id, "--as", kind, "--judge", "rules", "--out", str(out), "--store", str(store.path)])
        assert result.exit_code == 0, result.output
        loaded = datasets.load_dataset("json", data_files=str(out / f"{run_id}.{kind}.jsonl"), split="train")
        assert loaded.num_rows == rows
        card = (out / f"{run_id}.{kind}.card.md").read_text()
        assert "rules@1" in card and "MIT (GSM8K upstream)" in card and f'"rows": {rows}' in card
    first = json.loads((out / f"{run_id}.sft.jsonl").read_text().splitlines()[0])
    assert first["messages"][-1]["content"] in stored_user_turns(store, run_id)
    empty = runner.invoke(cli, ["export", run_id, "--as", "sft", "--judge", "rules", "--user-model", "nobody", "--out", str(out),
                                "--store", str(store.path)])
    assert empty.exit_code == 1 and "no sft rows" in empty.output
    bad = runner.invoke(cli, ["export", run_id, "--as", "csv", "--judge", "rules", "--out", str(out), "--store", str(store.path)])
    assert bad.exit_code == 2 and "unknown export kind 'csv'" in bad.output
