"""Two `testbed judge` processes on one run with one LLM judge: the second is refused with the first one's pid and
host, and the judge's server is paid once per turn."""

from __future__ import annotations

import socket
import subprocess
import time

import yaml

from fault_server import FaultServer, ok
from fault_specs import write_probe
from helpers import REPO, TESTBED, run_cli, run_id_of, write_yaml

VERDICT = '{"followup": true, "reason": "asks about a step"}'


def plan(request):
    """Turns read at once; each judge call takes a while (12 s for the six, under the judge agent's 10 s
    timeout), so the first judge is still at work when the second starts, however long a loaded machine takes to start a process."""
    if "<<<BEGIN USER_TURN" in request.text:
        return ok(VERDICT, delay_s=2.0)
    return ok("Why did you add those numbers?")


def test_a_second_judge_process_is_refused_and_no_turn_is_judged_twice(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(plan) as server:
        spec = write_probe(tmp_path, server.base_url, items=6, temperatures=(0.0,), concurrency=1)
        run = run_cli("run", str(spec), "--store", str(store), "-q", "--no-report", timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        run_id = run_id_of(run.stdout)
        agent = yaml.safe_load((tmp_path / "fault-agent.yaml").read_text())
        write_yaml(tmp_path / "judge-agent.yaml", {**agent, "name": "judge-agent", "timeout_s": 10})
        judge = ["judge", run_id, "--judge", "followup", "--model", str(tmp_path / "judge-agent.yaml"), "--store", str(store), "-q"]
        first = subprocess.Popen([*TESTBED, *judge], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while not any("<<<BEGIN USER_TURN" in r.text for r in server.requests):
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        second = run_cli(*judge, timeout=120)
        out, err = first.communicate(timeout=120)
        judge_calls = [r for r in server.requests if "<<<BEGIN USER_TURN" in r.text]
    assert first.returncode == 0, out + err
    assert second.returncode == 2
    assert "is being labelled by judge followup" in second.stderr
    assert f"process {first.pid} on host {socket.gethostname()}" in second.stderr
    assert len(judge_calls) == 6, "each user turn judged once, by the first process only"
    again = run_cli(*judge, timeout=120)
    assert again.returncode == 0 and "6 already scored before" in again.stdout, "the lease is released when the first ends"
