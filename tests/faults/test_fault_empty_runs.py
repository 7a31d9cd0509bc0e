"""Runs with nothing to show say so and why; output redirected to a file gets whole run ids and no progress bar."""

from __future__ import annotations

from fault_server import Fault, FaultServer
from fault_specs import write_probe
from helpers import run_cli, run_id_of
from testbed.store import Store

REFUSED = Fault("raw", status=400, body=b'{"error": {"message": "max_tokens is too large"}}')


def test_a_run_whose_episodes_all_errored_says_so_in_export_plot_and_graph(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: REFUSED) as server:
        spec = write_probe(tmp_path, server.base_url, items=2, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), "--no-report", timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    assert "━" not in run.stdout and "tok/s" not in run.stdout, "no progress bar is drawn into redirected output"
    for command in (["export", run_id, "--as", "sft", "--out", str(tmp_path / "out")], ["plot", run_id, "--out", str(tmp_path / "p")],
                    ["graph", run_id, "--out", str(tmp_path / "g")]):
        out = run_cli(*command, "--store", str(store))
        assert out.returncode == 1, (command, out.stderr)
        assert f"run {run_id} has no simulated-user turns: 2 of its 2 episodes errored before a simulated user spoke" in out.stderr
        assert "max_tokens is too large" in out.stderr and "testbed judge" not in out.stderr


def test_report_on_a_run_without_episodes_says_there_is_nothing_and_why(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.begin_run("empty-run", scenario="probe-x", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=6)
    store.close()
    out = run_cli("report", "empty-run", "--store", str(tmp_path / "s.sqlite"))
    assert out.returncode == 1
    assert "run empty-run has no episodes to report: it planned 6 and none has finished yet" in out.stderr


def test_runs_piped_lists_every_id_whole(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    long_id = "a-very-long-scenario-name-for-a-sweep-of-many-models-and-datasets-0123456789abcdef"
    store.begin_run(long_id, scenario="probe-x", kind="probe", spec={}, fingerprint="f", versions={}, git_revision=None, planned=1)
    store.close()
    out = run_cli("runs", "--store", str(tmp_path / "s.sqlite"))
    assert out.returncode == 0
    header, row = out.stdout.splitlines()
    assert header.split("\t")[0] == "run id" and row.split("\t")[0] == long_id


def test_the_report_of_a_run_whose_episodes_all_errored_says_so_after_judging_too(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: REFUSED) as server:
        spec = write_probe(tmp_path, server.base_url, items=2, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), "--no-report", timeout=120)
    run_id = run_id_of(run.stdout)
    judged = run_cli("judge", run_id, "--store", str(store), "-q")
    assert judged.returncode == 0, judged.stderr
    out = run_cli("report", run_id, "--store", str(store))
    assert out.returncode == 0, out.stderr
    title = " ".join(out.stdout.split())
    assert "every episode errored: 2 of 2; nothing to judge" in title
    assert "max_tokens is too large" in title
    assert "testbed judge" not in out.stdout
