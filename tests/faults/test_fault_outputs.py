"""An --out folder that cannot be made or written is named, with what to do, before any work: never an unexpected
error asking the user to report it."""

from __future__ import annotations

from fault_server import FaultServer, ok
from fault_specs import write_probe
from helpers import run_cli, run_id_of


def test_export_plot_and_graph_name_an_output_folder_they_cannot_create(tmp_path):
    store = tmp_path / "s.sqlite"
    with FaultServer(lambda r: ok("Why is that?")) as server:
        spec = write_probe(tmp_path, server.base_url, items=2, temperatures=(0.0,))
        run = run_cli("run", str(spec), "--store", str(store), "-q", "--no-report", timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    run_id = run_id_of(run.stdout)
    (tmp_path / "a-file").write_text("")
    blocked = tmp_path / "a-file" / "out"
    for command in (["export", run_id, "--as", "sft"], ["plot", run_id], ["graph", run_id]):
        out = run_cli(*command, "--out", str(blocked), "--store", str(store))
        assert out.returncode == 2, (command, out.stdout, out.stderr)
        assert f"cannot create the output folder {blocked}" in out.stderr and "pass --out with a folder you can write" in out.stderr
        assert "report it" not in out.stderr and "Traceback" not in out.stderr
