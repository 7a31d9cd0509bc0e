"""A command reads each run once: a comparison of three frameworks, and a dialogue's report with a judge, run each
whole-run query (episodes, messages, the judge's labels) once per run, however many tables use it."""

from __future__ import annotations

import re
from collections import Counter

from test_framework_compare import conversation, stored
from testbed.analysis.reports.compare import compare_frameworks
from testbed.analysis.reports.probe import report_frame
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store.labels import JudgeIdentity, write_labels

JUDGE = JudgeIdentity("local", "v1")
WHOLE_RUN = {"episodes": r"SELECT \* FROM episodes WHERE run_id='([^']+)'", "messages": r"SELECT \* FROM messages WHERE run_id='([^']+)'",
             "labels": r"FROM labels WHERE label_id IN \(SELECT MAX\(label_id\) FROM labels WHERE run_id='([^']+)'"}
"""The whole-run reads, each with the run id it names."""


def reads(statements: list[str]) -> Counter:
    """(table, run id) → how many times the whole run was read from it."""
    return Counter((table, run) for sql in statements for table, rule in WHOLE_RUN.items() for run in re.findall(rule, sql))


def labelled(tmp_path):
    store = stored(tmp_path, {name: {"e1": conversation("Why 5?", "Thanks"), "e2": conversation("ok")}
                              for name in ("native", "autogen", "langgraph")})
    verdict = Verdict("genuine_followup", True, "asks")
    for run in ("native", "autogen", "langgraph"):
        write_labels(store, run, JUDGE, [label_row("e1", 2, verdict), label_row("e1", 4, verdict), label_row("e2", 2, verdict)])
    return store


def traced(store, read):
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        result = read()
    finally:
        store.conn.set_trace_callback(None)
    return result, reads(statements)


def test_a_comparison_reads_each_run_once_the_baseline_included(tmp_path):
    store = labelled(tmp_path)
    runs = {name: name for name in ("native", "autogen", "langgraph")}
    frame, counted = traced(store, lambda: compare_frameworks(store, runs, dict.fromkeys(runs, JUDGE)))
    assert list(frame.framework) == list(runs) and frame.paired_episodes.iloc[1:].tolist() == [2, 2]
    assert counted == {(table, run): 1 for table in WHOLE_RUN for run in runs}


def test_a_dialogue_report_with_its_judge_reads_the_run_once(tmp_path):
    store = labelled(tmp_path)
    frame, counted = traced(store, lambda: report_frame(store, "native", JUDGE))
    assert frame.user_turns.sum() == 3 and frame.judged.sum() == 3
    assert counted == {("episodes", "native"): 1, ("messages", "native"): 1, ("labels", "native"): 1}


def test_a_comparisons_frames_are_what_the_tables_beside_it_read(tmp_path):
    from testbed.analysis.frames import run_frames, shared_reads
    from testbed.store.run_frames import RunFrames

    store = labelled(tmp_path)
    read = RunFrames(store, "native", JUDGE)
    with shared_reads(read):
        assert run_frames(store, "native", JUDGE) is read and run_frames(store, "native").judge is None
        _, counted = traced(store, lambda: (run_frames(store, "native", JUDGE).turns, read.episodes))
    assert counted == {("messages", "native"): 1, ("episodes", "native"): 1}, "asked inside the block, read once"
    assert run_frames(store, "native", JUDGE) is not read, "outside the block, afresh"
