"""A report's tables share one read of the run's frames, and only inside `shared_reads`."""

from __future__ import annotations

from testbed.analysis.frames import episodes_frame, judge_labels, shared_reads
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store import EpisodeKey, EpisodeOutcome
from testbed.store.labels import JudgeIdentity, write_labels
from testbed.transcript import Message

RUN = "probe-shared-0000"
WHO = JudgeIdentity("local", "v1")


def write(store, eid: str) -> None:
    key = EpisodeKey(eid, "i", "gsm8k", "a", "m", "u", "m", "raw", 0.0, 0, "none")
    messages = [Message("user", "What is 2 + 2?", "dataset", 0), Message("assistant", "4", "a", 1), Message("user", "Why?", "u", 2)]
    store.write_episode(RUN, EpisodeOutcome(key, messages, "done", "max_turns"))
    write_labels(store, RUN, WHO, [label_row(eid, 2, Verdict("genuine_followup", True, "asks"))])


def test_inside_the_block_the_run_is_read_once_and_outside_afresh(store):
    store.begin_run(RUN, scenario="probe-shared", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=2)
    write(store, "e1")
    with shared_reads():
        first = episodes_frame(store, RUN)
        first["scratch"] = 1
        write(store, "e2")
        assert len(episodes_frame(store, RUN)) == 1 and "scratch" not in episodes_frame(store, RUN)
        assert len(judge_labels(store, RUN, WHO)) == 2, "read for the first time here, after e2"
        write(store, "e3")
        assert len(judge_labels(store, RUN, WHO)) == 2
    assert len(episodes_frame(store, RUN)) == 3 and len(judge_labels(store, RUN, WHO)) == 3
