"""Spec loading: one clear SpecError per bad spec (file, field, fix); stable, location-free fingerprints."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from testbed.specs.errors import SpecError
from testbed.specs.loader import load_agent, load_scenario
from testbed.specs.scenario import KNOWN_DATASETS

REPO = Path(__file__).resolve().parents[2]
BUILTIN_SCENARIO = REPO / "scenarios" / "probe-gsm8k.yaml"

AGENT = {"name": "scripted-a", "backend": "scripted", "model": "echo", "outputs": ["hello"]}
SCENARIO = {
    "kind": "probe",
    "name": "unit-probe",
    "dataset": "gsm8k",
    "items": {"limit": 5},
    "assistant": "agent.yaml",
    "user": "agent.yaml",
    "user_modes": ["instructed"],
    "user_prompt_file": "prompts/user.md",
    "temperatures": [0.0, 1.0],
}


def write_yaml(path: Path, data: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def scenario_dir(root: Path, *, agent: dict | None = None, prompt: str = "Be the user.\n{conversation}\n") -> Path:
    write_yaml(root / "agent.yaml", agent or AGENT)
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "user.md").write_text(prompt)
    return root


def write_scenario(root: Path, drop: tuple[str, ...] = (), **changes) -> Path:
    scenario_dir(root)
    data = {k: v for k, v in SCENARIO.items() if k not in drop}
    data.update(changes)
    return write_yaml(root / "scenario.yaml", data)


def assert_one_error(exc: SpecError, path: Path, field: str, *fragments: str) -> str:
    """The message names the file, exactly one field, the problem, and a fix."""
    message = str(exc)
    assert exc.path == str(path)
    assert exc.field == field
    assert message.startswith(f"{path}: ")
    assert f"field `{field}`" in message
    assert message.count("field `") == 1
    assert "Fix: " in message and exc.fix.strip()
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    return message


# --- positive cases ---------------------------------------------------------------------------


def test_valid_scenario_loads_with_agents_and_prompt(tmp_path):
    path = write_scenario(tmp_path)
    resolved = load_scenario(path)
    assert resolved.spec.name == "unit-probe"
    assert resolved.spec.items.limit == 5
    assert resolved.assistant.spec.name == "scripted-a"
    assert resolved.assistant.path == tmp_path / "agent.yaml"
    assert resolved.user_prompt == "Be the user.\n{conversation}\n"


def test_builtin_loads_by_name_and_by_path_with_same_fingerprint():
    by_name = load_scenario("probe-gsm8k")
    by_path = load_scenario(str(BUILTIN_SCENARIO))
    assert by_name.spec.name == by_path.spec.name == "probe-gsm8k"
    assert by_name.spec.dataset == "gsm8k"
    assert by_name.assistant.spec.name == "smollm2-135m"
    assert by_name.user_prompt and "{conversation}" in by_name.user_prompt
    assert by_name.fingerprint() == by_path.fingerprint()
    assert len(by_name.fingerprint()) == 10


def test_limit_override_changes_items_and_fingerprint():
    base = load_scenario("probe-gsm8k")
    limited = load_scenario("probe-gsm8k", limit=3)
    assert base.spec.items.limit == 20
    assert limited.spec.items.limit == 3
    assert limited.fingerprint() != base.fingerprint()


def test_limit_override_when_spec_has_no_items(tmp_path):
    path = write_scenario(tmp_path, drop=("items",))
    assert load_scenario(path).spec.items.limit is None
    assert load_scenario(path, limit=7).spec.items.limit == 7


def test_limit_override_is_validated(tmp_path):
    path = write_scenario(tmp_path)
    with pytest.raises(SpecError) as info:
        load_scenario(path, limit=0)
    assert_one_error(info.value, path, "items.limit")


def test_fingerprint_stable_across_loads():
    assert load_scenario("probe-gsm8k").fingerprint() == load_scenario("probe-gsm8k").fingerprint()


def test_fingerprint_independent_of_location(tmp_path):
    fingerprints = []
    for folder in ("one", "two/deeper"):
        root = tmp_path / folder
        root.mkdir(parents=True)
        shutil.copytree(REPO / "scenarios" / "prompts", root / "prompts")
        shutil.copy(REPO / "agents" / "smollm2.yaml", root / "smollm2.yaml")
        text = BUILTIN_SCENARIO.read_text().replace("assistant: smollm2", "assistant: smollm2.yaml")
        text = text.replace("user: smollm2", "user: smollm2.yaml")
        (root / "probe-gsm8k.yaml").write_text(text)
        resolved = load_scenario(root / "probe-gsm8k.yaml")
        assert resolved.assistant.path == root / "smollm2.yaml"
        assert resolved.user.path == root / "smollm2.yaml"
        fingerprints.append(resolved.fingerprint())
    assert fingerprints[0] == fingerprints[1]


def test_copied_builtin_has_builtin_fingerprint(tmp_path):
    shutil.copytree(REPO / "scenarios" / "prompts", tmp_path / "prompts")
    shutil.copy(BUILTIN_SCENARIO, tmp_path / "probe-gsm8k.yaml")
    copied = load_scenario(tmp_path / "probe-gsm8k.yaml")
    assert copied.path != load_scenario("probe-gsm8k").path
    assert copied.fingerprint() == load_scenario("probe-gsm8k").fingerprint()


def test_fingerprint_changes_with_prompt_text(tmp_path):
    a = write_scenario(tmp_path / "a")
    b = write_scenario(tmp_path / "b")
    assert load_scenario(a).fingerprint() == load_scenario(b).fingerprint()
    (tmp_path / "b" / "prompts" / "user.md").write_text("Another prompt {conversation}")
    assert load_scenario(a).fingerprint() != load_scenario(b).fingerprint()


def test_agent_override_replaces_scenario_agent(tmp_path):
    path = write_scenario(tmp_path)
    other = write_yaml(tmp_path / "elsewhere" / "other.yaml", {**AGENT, "name": "other-agent", "model": "other"})
    base = load_scenario(path)
    overridden = load_scenario(path, assistant=str(other))
    assert overridden.assistant.spec.name == "other-agent"
    assert overridden.assistant.path == other
    assert overridden.user.spec.name == "scripted-a"
    assert overridden.fingerprint() != base.fingerprint()
    user_overridden = load_scenario(path, user=other)
    assert user_overridden.user.spec.name == "other-agent"
    assert user_overridden.assistant.spec.name == "scripted-a"


def test_agent_override_by_builtin_name(tmp_path):
    path = write_scenario(tmp_path)
    assert load_scenario(path, assistant="smollm2").assistant.spec.name == "smollm2-135m"


def test_agent_reference_resolves_next_to_scenario_before_cwd(tmp_path, monkeypatch):
    path = write_scenario(tmp_path / "spec")
    decoy = tmp_path / "cwd"
    write_yaml(decoy / "agent.yaml", {**AGENT, "name": "decoy"})
    monkeypatch.chdir(decoy)
    resolved = load_scenario(path)
    assert resolved.assistant.spec.name == "scripted-a"
    assert resolved.assistant.path == tmp_path / "spec" / "agent.yaml"


def test_load_agent_with_system_prompt(tmp_path):
    (tmp_path / "sys.md").write_text("You are terse.")
    path = write_yaml(tmp_path / "a.yaml", {**AGENT, "system_prompt_file": "sys.md"})
    agent = load_agent(path)
    assert agent.system_prompt == "You are terse."
    assert agent.as_dict()["spec"]["name"] == "scripted-a"


# --- bad scenarios ----------------------------------------------------------------------------


def test_unknown_top_level_field_lists_allowed(tmp_path):
    path = write_scenario(tmp_path, turns=3)
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    message = assert_one_error(info.value, path, "turns", "unknown field", "allowed here:")
    for allowed in ("assistant", "dataset", "items", "temperatures", "user_modes", "perturbations"):
        assert allowed in message


def test_unknown_nested_field(tmp_path):
    path = write_scenario(tmp_path, items={"limitt": 3})
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    message = assert_one_error(info.value, path, "items.limitt", "unknown field")
    assert "allowed here: contexts, limit, seed" in message


def test_wrong_type_temperatures(tmp_path):
    path = write_scenario(tmp_path, temperatures="hot")
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "temperatures", "'hot'", "right type")


def test_wrong_type_nested_limit(tmp_path):
    path = write_scenario(tmp_path, items={"limit": "ten"})
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "items.limit", "'ten'")


def test_wrong_type_items_with_limit_override_is_spec_error(tmp_path):
    path = write_scenario(tmp_path, items="ten")
    with pytest.raises(SpecError) as info:
        load_scenario(path, limit=3)
    assert_one_error(info.value, path, "items", "'ten'")


def test_temperature_out_of_range(tmp_path):
    path = write_scenario(tmp_path, temperatures=[0.0, 3.5])
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "temperatures", "3.5", "between 0 and 2")


def test_missing_prompt_file(tmp_path):
    path = write_scenario(tmp_path, user_prompt_file="nope.md")
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "user_prompt_file", "nope.md", "does not exist")


def test_instructed_mode_without_prompt_file(tmp_path):
    path = write_scenario(tmp_path, drop=("user_prompt_file",))
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "user_prompt_file", "instructed")


def test_unknown_dataset_lists_known(tmp_path):
    path = write_scenario(tmp_path, dataset="mmlu")
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    message = assert_one_error(info.value, path, "dataset", "mmlu")
    for known in KNOWN_DATASETS:
        assert known in info.value.fix
    assert "gsm8k" in message


def test_missing_required_dataset(tmp_path):
    path = write_scenario(tmp_path, drop=("dataset",))
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "dataset", "missing", "add `dataset:`")


def test_malformed_yaml_names_line(tmp_path):
    scenario_dir(tmp_path)
    path = tmp_path / "scenario.yaml"
    path.write_text("kind: probe\nname: x\n  dataset: gsm8k\nuser: agent.yaml\n")
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "line 3", "not valid YAML")


def test_yaml_that_is_not_a_mapping(tmp_path):
    path = tmp_path / "scenario.yaml"
    path.write_text("- just\n- a list\n")
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "(top level)", "not a YAML mapping")


def test_agent_reference_that_does_not_exist(tmp_path):
    path = write_scenario(tmp_path, assistant="no-such-agent.yaml")
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, path, "assistant", "no-such-agent.yaml", "smollm2")


def test_unknown_scenario_name_lists_builtins():
    with pytest.raises(FileNotFoundError, match="probe-gsm8k"):
        load_scenario("no-such-scenario")


def test_bad_agent_is_reported_against_the_agent_file(tmp_path):
    scenario_dir(tmp_path, agent={**AGENT, "temperature": 0.5})
    data = dict(SCENARIO)
    path = write_yaml(tmp_path / "scenario.yaml", data)
    with pytest.raises(SpecError) as info:
        load_scenario(path)
    assert_one_error(info.value, tmp_path / "agent.yaml", "temperature", "unknown field", "sampling")


# --- bad agents -------------------------------------------------------------------------------


def test_agent_unknown_backend(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {**AGENT, "backend": "ollama"})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "backend", "'ollama'", "vllm", "openai", "scripted")


def test_agent_openai_without_base_url(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {"name": "o", "backend": "openai", "model": "gpt"})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "base_url", "needs base_url", "http://")


def test_agent_base_url_must_be_http(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {"name": "o", "backend": "openai", "model": "gpt", "base_url": "localhost:8000"})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "base_url", "not an http(s) URL")


def test_agent_api_key_in_api_key_env_is_refused_without_echoing_it(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {"name": "o", "backend": "openai", "model": "gpt",
                                            "base_url": "http://127.0.0.1:1/v1", "api_key_env": "sk-abc123"})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "api_key_env", "looks like a key", "environment variable")
    assert "sk-abc123" not in str(info.value)


def test_agent_api_key_env_name_accepted(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {"name": "o", "backend": "openai", "model": "gpt",
                                            "base_url": "http://127.0.0.1:1/v1", "api_key_env": "MY_API_KEY"})
    assert load_agent(path).spec.api_key_env == "MY_API_KEY"


def test_agent_scripted_without_outputs(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {"name": "s", "backend": "scripted", "model": "m"})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "outputs")


def test_agent_missing_prompt_file(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {**AGENT, "system_prompt_file": "missing.md"})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "system_prompt_file", "missing.md")


def test_agent_nested_unknown_field_lists_sampling_fields(tmp_path):
    path = write_yaml(tmp_path / "a.yaml", {**AGENT, "sampling": {"temp": 0.3}})
    with pytest.raises(SpecError) as info:
        load_agent(path)
    assert_one_error(info.value, path, "sampling.temp", "max_tokens, seed, temperature, top_p")
