"""One rule picks the labeller a run is shown under: report, replay, plot, graph and export agree, also with two
versions of the local judge on one run (the one that labelled last wins)."""

from __future__ import annotations

from dataclasses import replace

from testbed.cli.report_output import report_judge as _report_judge
from testbed.cli.replay import _judge
from testbed.cli.shell import labelled_run
from testbed.judges.turns import label_row
from testbed.judges.verdict import Verdict
from testbed.store import Store
from testbed.store.labels import HUMAN, JudgeIdentity, default_identity, identities, resolve_identity, write_labels


def relabel(store: Store, run_id: str, who: JudgeIdentity) -> None:
    rows = [label_row(t.episode_id, t.turn_index, Verdict("genuine_followup", True, "again")) for t in store.turns(run_id)]
    write_labels(store, run_id, who, rows)


def test_every_face_shows_the_local_version_that_labelled_last(replay_copy):
    path, run_id = replay_copy
    store = Store(path)
    [local] = [i for i in identities(store, run_id) if i.judge == "local"]
    older_name = replace(local, version="local-0")
    relabel(store, run_id, older_name)
    store.close()
    db = Store(path, readonly=True)
    chosen = {"default": default_identity(db, run_id), "report": _report_judge(db, run_id, None), "replay": _judge(db, run_id, None),
              "plot/graph": labelled_run(db, run_id, "local")[1], "export": resolve_identity(db, run_id, "local")}
    assert set(chosen.values()) == {older_name}, chosen
    assert resolve_identity(db, run_id, f"local@{local.version}") == local, "a version named is the version shown"


def test_local_comes_before_model_judges_and_model_judges_before_people(replay_copy):
    path, run_id = replay_copy
    store = Store(path)
    [local] = [i for i in identities(store, run_id) if i.judge == "local"]
    person = JudgeIdentity(HUMAN, "v1", "ann")
    relabel(store, run_id, person)
    assert default_identity(store, run_id) == local
    store.conn.execute("DELETE FROM labels WHERE judge='local'")
    store.conn.commit()
    assert default_identity(store, run_id).judge == "failure-modes"
    store.conn.execute("DELETE FROM labels WHERE judge='failure-modes'")
    store.conn.commit()
    assert default_identity(store, run_id) == person
    store.conn.execute("DELETE FROM labels")
    store.conn.commit()
    assert default_identity(store, run_id) is None
