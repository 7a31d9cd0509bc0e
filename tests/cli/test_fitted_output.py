"""Every table the command line prints reads at 80 columns: no line is wider, no header or value is cut into slivers
(each of its words appears whole); at 200 columns a table stays a table; and `report -f json|csv|markdown` carry
the tables the terminal shows beside the report (realism, perturbations) and the τ² faults."""

from __future__ import annotations

import asyncio
import io
import json

import pandas as pd
import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from helpers import REPO
from hostile_text import WIRE_RUN, build_hostile_store
from synthetic_chats import conversation, chats_file, real_context_probe  # noqa: F401
from testbed.analysis.realism.render import realism_rows
from testbed.analysis.realism.runs import run_realism
from testbed.analysis.reports.compare_render import columns_for, comparison_tables
from testbed.analysis.reports.render import display_rows
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app
from testbed.fitted_table import FitColumn, FittedTable
from testbed.judges.runner import judge_run
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario

runner = CliRunner()
BORDERS = "┃│┏┓┗┛┡┩┣┫━─┳┻╇╈┼┬┴└┘┌┐╭╮╰╯"


def at(width: int, *args: str):
    """The command's result with the terminal `width` columns wide."""
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result


def assert_fits(output: str, width: int = 80) -> None:
    wide = [line for line in output.splitlines() if cell_len(line) > width]
    assert not wide, f"{len(wide)} lines wider than {width}, e.g. {wide[0]!r}"


def assert_whole(output: str, cells) -> None:
    """Every word of every header and value appears whole (a column squeezed into slivers cuts them: `accu…`)."""
    text = output.translate({ord(c): " " for c in BORDERS})
    cut = sorted({word for cell in cells for word in str(cell).split() if word not in text})
    assert not cut, f"cut or missing: {cut[:12]}"


def is_table(output: str) -> bool:
    return "┏" in output and "┃" in output


def test_a_wide_table_folds_into_cards_at_80_columns_and_stays_a_table_at_200():
    header = [FitColumn("condition", no_wrap=True), *(f"measure number {k} (95% CI)" for k in range(9))]
    rows = [[f"model-{r}-instructed", *(f"{10 * k + r}.0% ({k}%–{50 + k}%)" for k in range(9))] for r in range(3)]
    table = FittedTable(header, rows, title="many measures", caption="rates exclude errored episodes")
    narrow, wide = Console(file=io.StringIO(), width=80), Console(file=io.StringIO(), width=200)
    narrow.print(table)
    wide.print(table)
    folded, kept = narrow.file.getvalue(), wide.file.getvalue()
    assert_fits(folded)
    assert not is_table(folded) and "model-1-instructed" in folded and "measure number 8 (95% CI): 82.0% (8%–58%)" in folded
    assert is_table(kept) and "measure number 8" in kept.splitlines()[2]
    assert_whole(folded, [h.header if isinstance(h, FitColumn) else h for h in header] + [v for row in rows for v in row])


def test_a_compact_table_folds_each_row_into_a_few_lines_of_whole_pairs():
    rows = [[f"dialogue-gsm8k-framework-{k}-2771259552", "dialogue-gsm8k", "langgraph", "done", "2", "0", "2", "2026-12-06T11:42:26",
             "2026-12-06T11:42:35"] for k in range(3)]
    header = [FitColumn("run id", no_wrap=True), "scenario", "framework", "status", "done", "errors", "planned", "started", "finished"]
    console = Console(file=io.StringIO(), width=60)
    console.print(FittedTable(header, rows, title="runs", compact=True))
    shown = console.file.getvalue()
    assert_fits(shown, 60)
    lines = shown.splitlines()
    assert lines[1] == "run id: dialogue-gsm8k-framework-0-2771259552" and len(lines) == 1 + 3 * 5
    assert all(line.startswith("  ") for line in lines[2:5]), "a row's further lines hang under its first"
    assert "framework: langgraph" in shown and "started: 2026-12-06T11:42:26" in shown, "a pair is never split"


def test_a_table_that_fits_with_its_words_whole_stays_a_table_at_80_columns():
    table = FittedTable(["label", "precision", "recall"], [["genuine_followup", "0.50", "0.25"], ["short_filler", "1.00", "n/a"]])
    console = Console(file=io.StringIO(), width=80)
    console.print(table)
    assert is_table(console.file.getvalue())


@pytest.fixture
def probe_run(spec_dir, store):
    """A probe run with a truncated answer beside each plain one, labelled by the local and the follow-up judges."""
    spec = load_scenario(spec_dir(perturbations=["none", "truncation"], temperatures=[0.0, 1.0]))
    backends = {"assistant": ScriptedBackend(lambda r: "The answer is 4."), "user": ScriptedBackend(lambda r: "could you explain step 2?")}
    summary = asyncio.run(run_scenario(spec, store, backends=backends, show_progress=False))
    for judge in ("local", "followup"):
        asyncio.run(judge_run(store, summary.run_id, load_judge(judge), show_progress=False))
    store.close()
    return str(store.path), summary.run_id


def report_cells(db: str, run_id: str, judge: str | None = None) -> list[str]:
    from testbed.analysis.reports.probe import report_frame
    from testbed.store import Store
    from testbed.store.labels import fast_identity, resolve_identity

    store = Store(db, readonly=True)
    who = resolve_identity(store, run_id, judge) if judge else fast_identity(store, run_id)
    header, rows = display_rows(report_frame(store, run_id, who))
    return header + [v for row in rows for v in row]


def test_report_and_agree_read_at_80_columns(probe_run):
    db, run_id = probe_run
    report = at(80, "report", run_id, "--store", db).stdout
    assert_fits(report)
    assert_whole(report, report_cells(db, run_id))
    assert_whole(report, ["perturbation", "user turn changed (95% CI)", "follow-up none → perturbed", "truncation"])
    assert is_table(at(200, "report", run_id, "--store", db).stdout)
    agree = at(80, "agree", run_id, "--a", "local", "--b", "followup", "--store", db).stdout
    assert_fits(agree)
    assert "Cohen's κ" in agree


LABELS = ["genuine_followup", "restate_question", "echo_assistant", "meta_planning", "degenerate", "new_question", "short_filler",
          "other"]


def test_agree_per_label_and_confusion_read_at_80_columns(probe_run, tmp_path):
    from testbed.store import Store

    db, run_id = probe_run
    turns = Store(db, readonly=True).turns(run_id)
    labels = tmp_path / "ann.jsonl"
    labels.write_text("\n".join(json.dumps({"episode_id": t.episode_id, "turn_index": t.turn_index, "label": LABELS[k % len(LABELS)]})
                                for k, t in enumerate(turns)))
    at(80, "import-labels", run_id, str(labels), "--annotator", "ann", "--store", db)
    agree = at(80, "agree", run_id, "--a", "local", "--b", "human:ann", "--store", db).stdout
    assert_fits(agree)
    assert_whole(agree, ["precision", "recall", "f1", "support", *LABELS])
    assert is_table(agree), "the per-label table fits at 80 columns"


def table_lines(output: str) -> str:
    """The output without the lines that introduce a table (ending in `:`): those are left to the terminal to wrap."""
    return "\n".join(line for line in output.splitlines() if not line.endswith(":"))


def test_eval_judge_reads_at_80_columns_and_keeps_its_plain_columns_where_they_fit():
    gold, dev = str(REPO / "tests/fixtures/labelled-turns.jsonl"), str(REPO / "judges/models/learned-3.dev-error-rates.json")
    narrow = at(80, "eval-judge", "--judge", "local", gold, "--correct-with", dev).stdout
    assert_fits(table_lines(narrow))
    assert_whole(narrow, ["reference_rate", "judge_rate", "corrected_lo", "corrected_hi", "covers", *LABELS])
    assert "source_model: -  mode: -" in narrow, "the per-condition table folds into a card per condition"
    wide = at(200, "eval-judge", "--judge", "local", gold, "--correct-with", dev).stdout.splitlines()
    start = next(i for i, line in enumerate(wide) if line.startswith("follow-up rate per condition"))
    header, row = wide[start + 1].split(), wide[start + 2].split()
    assert header[:5] == ["source_model", "mode", "temperature", "perturbation", "turns"] and len(row) == len(header)


def test_report_formats_carry_the_perturbation_table(probe_run):
    db, run_id = probe_run
    rows = json.loads(at(80, "report", run_id, "--store", db, "-f", "json").stdout)
    perturbed = [r for r in rows if r["perturbation"] == "truncation"]
    assert perturbed and all(r["perturbed_pairs"] == 3 and 0 <= r["perturbed_changed"] <= 1 for r in perturbed)
    assert all(r["perturbed_pairs"] is None for r in rows if r["perturbation"] == "none")
    assert {"episodes", "followup_rate", "followup_lo"} <= set(rows[0]), "the report's own keys stay"
    csv = pd.read_csv(io.StringIO(at(80, "report", run_id, "--store", db, "-f", "csv").stdout))
    assert len(csv) == len(rows) and "perturbed_changed_lo" in csv.columns
    markdown = at(80, "report", run_id, "--store", db, "-f", "markdown").stdout
    assert "### perturbations" in markdown and "| perturbation | mode | T | pairs |" in markdown


def test_runs_compare_and_the_model_list_read_at_80_columns(spec_dir, tmp_path, monkeypatch):
    from testbed.cli.shell import console

    db = str(tmp_path / "c.sqlite")
    out = at(80, "compare", str(spec_dir()), "--frameworks", "native", "--judge", "local", "--store", db, "-q")
    progress, _, tables = out.stdout.partition("frameworks compared")
    assert "native: run" in progress, "a run's progress line is a line, not a table: the terminal wraps it"
    assert_fits(tables)
    assert_whole(tables, [name for name, _ in columns_for(pd.DataFrame({"framework": []}))] + ["native"])
    monkeypatch.setattr(console, "_force_terminal", True)
    listed = at(80, "runs", "--store", db).stdout
    assert_fits(listed)
    assert_whole(listed, ["run id", "scenario", "framework", "status", "planned", "started", "finished", "probe-test-"])
    assert_fits(at(80, "prepare-model", "--list").stdout)


def test_the_comparison_of_several_frameworks_folds_into_a_card_per_framework():
    from testbed.analysis.reports.compare_render import _rows

    frame = pd.DataFrame([{"framework": f, "episodes": 12, "errors": 0, "user_turns": 24, "scored_turns": 23, "followup_rate": 0.25,
                           "followup_lo": 0.1, "followup_hi": 0.45, "label_mix": {"genuine_followup": {"share": 0.25, "lo": 0.1, "hi": 0.45},
                                                                         "new_question": {"share": 0.5, "lo": 0.3, "hi": 0.7}},
                           "drift_share": 0.1, "drift_lo": 0.0, "drift_hi": 0.3, "median_onset": 3.0,
                           "terminations": {"max_turns": 10, "user_stop": 2}, "prompt_tokens_per_turn": 120.5,
                           "completion_tokens_per_turn": 20.0, "wall_s": 3.2, "client_cpu_ms_per_turn": 1.5, "turns_differ": 0.5,
                           "turns_differ_lo": 0.2, "turns_differ_hi": 0.8, "followup_change": 0.05}
                          for f in ("native", "autogen", "langgraph", "camel")])
    shown = io.StringIO()
    console = Console(file=shown, width=80)
    for table in comparison_tables(frame, [], None, "dialogue: frameworks compared"):
        console.print(table)
    assert_fits(shown.getvalue())
    assert_whole(shown.getvalue(), [name for name, _ in columns_for(frame)] + [v for row in _rows(frame) for v in row])


def test_report_wire_and_show_episode_of_hostile_text_read_at_80_columns(tmp_path):
    path, run_id = build_hostile_store(tmp_path)
    db = str(path)
    report = at(80, "report", run_id, "--store", db).stdout
    assert_fits(report)
    assert "episode(s) failed:" in report
    [row] = json.loads(at(80, "report", run_id, "--store", db, "-f", "json").stdout)
    assert list(row["error_reasons"].values()) == [1] and "HTTP 503 from the user model" in next(iter(row["error_reasons"]))
    csv = pd.read_csv(io.StringIO(at(80, "report", run_id, "--store", db, "-f", "csv").stdout))
    assert list(json.loads(csv.error_reasons[0]).values()) == [1], "the reasons as JSON in one CSV cell"
    assert "### episodes that failed" in at(80, "report", run_id, "--store", db, "-f", "markdown").stdout
    assert_fits(at(80, "wire", WIRE_RUN, "wire-episode", "--store", db).stdout)
    from testbed.store import Store

    episode = Store(db, readonly=True).episodes(run_id)[0].key.episode_id
    assert_fits(at(80, "show-episode", run_id, episode, "--store", db).stdout)


def test_the_realism_table_reads_at_80_columns_and_every_format_carries_it(tmp_path, store, chats_file):  # noqa: F811
    chats_file([conversation(k, follow_ups=2) for k in range(12)])
    summary = real_context_probe(tmp_path, store, user_modes=["raw", "instructed"], temperatures=[0.0, 1.0])
    realism = run_realism(store, summary.run_id, "local", closeness=True)
    store.close()
    db, run_id = str(store.path), summary.run_id
    from testbed.analysis.realism.render import HEADER

    shown = at(80, "report", run_id, "--store", db).stdout
    assert_fits(shown)
    assert_whole(shown, HEADER + [v for row in realism_rows(realism) for v in row] + report_cells(db, run_id))
    assert is_table(at(200, "report", run_id, "--store", db).stdout.split("realism:")[1])
    rows = json.loads(at(80, "report", run_id, "--store", db, "-f", "json").stdout)
    simulated = {(r["user_mode"], r["temperature"]): r for r in rows if r["user_mode"] != "human"}
    for r in realism.table.itertuples():
        row = simulated[(r.user_mode, r.temperature)]
        assert (row["realism_auc"], row["realism_auc_lo"], row["realism_jsd"]) == pytest.approx((r.auc, r.auc_lo, r.jsd))
        assert row["realism_giveaways"] == r.giveaways
    [human] = [r for r in rows if r["user_mode"] == "human"]
    assert human["realism_auc"] == 0.5 and human["realism_contexts"] == 12 and human["realism_followup_real"] is not None
    assert all(r["realism_weak_reference"] is False for r in rows)
    csv = pd.read_csv(io.StringIO(at(80, "report", run_id, "--store", db, "-f", "csv").stdout))
    assert {"realism_auc", "realism_cosine_lo", "realism_words_real"} <= set(csv.columns)
    assert "### realism" in at(80, "report", run_id, "--store", db, "-f", "markdown").stdout
    compared = json.loads(at(80, "compare", str(tmp_path / "real.yaml"), "--frameworks", "native", "--judge", "local",
                             "--store", str(tmp_path / "compare.sqlite"), "-q", "-f", "json").stdout)
    native = compared["realism"]["native"]
    assert len(native["rows"]) == 4 and native["real_users"]["turns"] == 12 and native["weak_reference"] is False


@pytest.fixture
def tau2_run(tmp_path, store):
    pytest.importorskip("tau2", reason="the τ² package is not installed (scripts/bootstrap.sh installs it)")
    from tau2_faulty_run import faulty_run

    run_id, spec = asyncio.run(faulty_run(tmp_path, store, temperatures=(0.0, 1.0), model="scripted-model"))
    store.close()
    return str(store.path), run_id, spec


FAULT_HEADERS = ["premature stop (95% CI)", "invented fact (95% CI)", "any user fault (95% CI)", "failed with user fault (95% CI)"]


def test_the_tau2_report_and_its_faults_read_at_80_columns_and_every_format_carries_the_faults(tau2_run):
    db, run_id, _ = tau2_run
    shown = at(80, "report", run_id, "--store", db, "--judge", "none").stdout
    assert_fits(shown)
    assert_whole(shown, report_cells(db, run_id, None) + FAULT_HEADERS)
    assert "simulated-user faults" in shown
    rows = json.loads(at(80, "report", run_id, "--store", db, "--judge", "none", "-f", "json").stdout)
    assert all(r["fault_invented_fact"] == 0.5 and r["fault_premature_stop"] == 0.5 and r["failed_with_fault"] == 1.0 for r in rows)
    csv = pd.read_csv(io.StringIO(at(80, "report", run_id, "--store", db, "--judge", "none", "-f", "csv").stdout))
    assert {"fault_any", "fault_any_lo", "fault_any_hi", "failed_with_fault"} <= set(csv.columns)
    markdown = at(80, "report", run_id, "--store", db, "--judge", "none", "-f", "markdown").stdout
    assert all(h in markdown.splitlines()[0] for h in FAULT_HEADERS)


def test_every_help_text_wraps_within_80_columns():
    commands = [info.name or info.callback.__name__.replace("_", "-") for info in app.registered_commands]
    for args in ([], *([c] for c in commands)):
        out = at(80, *args, "--help").stdout
        assert_fits(out)
    listing = at(80, "--help").stdout
    assert "Score a judge against reference labels" in listing and "With --correct-with" not in listing
    assert "realism_*" in at(80, "report", "--help").stdout, "the report's help says what its JSON holds"


def test_a_tau2_comparison_with_its_simulator_gap_reads_at_80_columns(tau2_run, tmp_path):
    _, _, spec = tau2_run
    db = str(tmp_path / "compare.sqlite")
    args = ("compare", str(spec), "--frameworks", "native", "--judge", "local", "--simulator-gap", "--store", db, "-q")
    _, _, tables = at(80, *args).stdout.partition("frameworks compared")
    assert_fits(tables)
    assert_whole(tables, ["reward (95% CI)", "pass^k (k=1,2,…)", "user fault (95% CI)", "failed with user fault (95% CI)",
                          "scripted-user reward", "simulator gap (95% CI)", "over 2 tasks"])
    [native] = json.loads(at(80, *args, "-f", "json").stdout)["frameworks"]
    assert {"fault_any", "failed_with_fault", "simulator_gap", "scripted_reward"} <= set(native)
