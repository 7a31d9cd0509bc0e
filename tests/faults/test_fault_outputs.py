"""An --out folder that cannot be made or written is named, with what to do, before any work: never an unexpected
error asking the user to report it."""

from __future__ import annotations

from fault_specs import finished_probe
from helpers import run_cli


def test_export_plot_and_graph_name_an_output_folder_they_cannot_create(tmp_path):
    store = tmp_path / "s.sqlite"
    run_id = finished_probe(tmp_path, store)
    (tmp_path / "a-file").write_text("")
    blocked = tmp_path / "a-file" / "out"
    for command in (["export", run_id, "--as", "sft"], ["plot", run_id], ["graph", run_id]):
        out = run_cli(*command, "--out", str(blocked), "--store", str(store))
        assert out.returncode == 2, (command, out.stdout, out.stderr)
        assert f"cannot create the output folder {blocked}" in out.stderr and "pass --out with a folder you can write" in out.stderr
        assert "report it" not in out.stderr and "Traceback" not in out.stderr
