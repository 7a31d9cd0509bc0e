"""A judge process that lost its lease (another took the run over after this one stalled past the lease's TTL)
writes no further label and stops with the reason: the two never both pay for the rest of the run's turns."""

from __future__ import annotations

import sqlite3
import time

import pytest

from testbed.backends.scripted import ScriptedBackend
from testbed.judges.runner import identity_of, judge_run, lease_key
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.loader import load_scenario
from testbed.store.sqlite_store import StoreError

VERDICT = '{"label": "genuine_followup", "reason": "asks why"}'


async def test_a_judge_that_lost_its_lease_writes_nothing_more_and_stops(spec_dir, store):
    scenario = load_scenario(spec_dir())
    answers = ScriptedBackend(lambda r: "It is 12 because 0.15 * 80 = 12.")
    users = ScriptedBackend(lambda r: "Why 0.15?" if r.continue_final_message else "It is 12.")
    run_id = (await run_scenario(scenario, store, backends={"assistant": answers, "user": users}, show_progress=False)).run_id
    judge = load_judge("failure-modes")
    calls = []

    def verdicts(request):
        calls.append(request)
        if len(calls) == 3:
            with sqlite3.connect(store.path) as other:
                other.execute("UPDATE run_leases SET token='other', pid=1, host='elsewhere', heartbeat_at=? WHERE run_id LIKE 'judge:%'",
                              (time.time(),))
        return VERDICT

    with pytest.raises(StoreError, match="lost the lease on (run )?judge:"):
        await judge_run(store, run_id, judge, show_progress=False, backend=ScriptedBackend(verdicts))
    written = store.conn.execute("SELECT COUNT(*) FROM labels WHERE judge='failure-modes'").fetchone()[0]
    assert written == 2, "the verdicts judged before the takeover are kept, none after"
    holder = store.conn.execute("SELECT token FROM run_leases WHERE run_id=?", (lease_key(run_id, identity_of(judge)),)).fetchone()
    assert tuple(holder) == ("other",), "the lease the other process holds is left alone"

