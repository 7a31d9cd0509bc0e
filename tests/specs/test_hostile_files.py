"""Hostile spec, prompt and label files: each fails fast with one short SpecError naming the file, never a traceback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import run_cli, write_yaml
from testbed.backends.scripted import ScriptedBackend
from testbed.cli import app
from testbed.analysis.judge_quality.judge_eval import read_gold
from testbed.judges.specs import load_judge
from testbed.running.runner import run_scenario
from testbed.specs.errors import SpecError, cut
from testbed.specs.files import MAX_ALIAS_VALUES, MAX_FILE_BYTES, parse_yaml, read_text
from testbed.specs.loader import load_agent, load_scenario

LATIN1 = "Réponds en français.\n".encode("latin-1")


def alias_bomb(spec: Path) -> Path:
    """Append a "billion laughs" to a valid spec: nine levels of nine aliases, 9**9 values in all."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    bomb = spec.with_name("bomb.yaml")
    bomb.write_text(spec.read_text() + "\n".join(lines) + "\n")
    return bomb


def duplicate_keys(spec: Path) -> Path:
    """A valid spec with `max_tokens` given a second time on its last line."""
    dup = spec.with_name("dupkeys.yaml")
    dup.write_text(spec.read_text() + "max_tokens: 64\n")
    return dup


def refused(call, *args, **kwargs) -> SpecError:
    """The SpecError `call` raises, checked to be one short message."""
    with pytest.raises(SpecError) as info:
        call(*args, **kwargs)
    message = str(info.value)
    assert len(message) < 500 and message.count("field `") == 1 and "Fix: " in message
    return info.value


def test_alias_bomb_fails_fast_with_a_short_message(spec_dir):
    bomb = alias_bomb(spec_dir())
    assert bomb.stat().st_size < 1000
    start = time.perf_counter()
    error = refused(load_scenario, bomb)
    assert time.perf_counter() - start < 2.0
    assert error.path == str(bomb) and f"aliases expand to more than {MAX_ALIAS_VALUES:,} values" in error.problem
    assert "remove the aliases" in error.fix


def test_self_referencing_alias_is_refused(spec_dir):
    path = spec_dir()
    path.write_text(path.read_text() + "loop: &loop [*loop]\n")
    error = refused(load_scenario, path)
    assert error.path == str(path) and error.field.startswith("line ") and "contains it" in error.problem


def test_duplicate_key_names_key_and_both_lines(spec_dir):
    path = duplicate_keys(spec_dir())
    last = len(path.read_text().splitlines())
    error = refused(load_scenario, path)
    assert error.path == str(path) and error.field == f"line {last}"
    assert "'max_tokens' appears twice" in error.problem and "first on line" in error.problem


def test_merge_keys_may_override_without_counting_as_duplicates(tmp_path):
    text = "base: &base {model: m, seed: 1}\nagent:\n  <<: *base\n  model: m2\n"
    assert parse_yaml(text, tmp_path / "x.yaml") == {"base": {"model": "m", "seed": 1}, "agent": {"model": "m2", "seed": 1}}


def test_non_utf8_spec(spec_dir):
    path = spec_dir()
    path.write_bytes(path.read_bytes() + b"description: " + LATIN1)
    error = refused(load_scenario, path)
    assert error.path == str(path) and error.field == "(file)"
    assert "not UTF-8" in error.problem and "0xe9" in error.problem and "UTF-8" in error.fix


def test_directory_given_as_spec(tmp_path):
    folder = tmp_path / "specs"
    folder.mkdir()
    error = refused(load_scenario, folder)
    assert error.path == str(folder) and "is a directory, not a scenario spec file" in error.problem


def test_oversized_spec_is_refused_before_parsing(spec_dir):
    path = spec_dir()
    path.write_text(path.read_text() + "description: " + "x" * MAX_FILE_BYTES + "\n")
    start = time.perf_counter()
    error = refused(load_scenario, path)
    assert time.perf_counter() - start < 2.0
    assert error.path == str(path) and f"{MAX_FILE_BYTES:,}-byte limit" in error.problem


def test_invalid_yaml_value_names_its_line(spec_dir):
    path = spec_dir()
    path.write_text(path.read_text() + "description: 2001-13-45\n")
    error = refused(load_scenario, path)
    assert error.field == f"line {len(path.read_text().splitlines())}" and "month" in error.problem


def test_non_utf8_system_prompt(tmp_path):
    (tmp_path / "system.md").write_bytes(LATIN1)
    agent = {"name": "a", "backend": "scripted", "model": "m", "outputs": ["x"], "system_prompt_file": "system.md"}
    path = write_yaml(tmp_path / "a.yaml", agent)
    error = refused(load_agent, path)
    assert error.path == str(path) and error.field == "system_prompt_file"
    assert "system.md is not UTF-8 text" in error.problem


def test_prompt_path_that_is_a_directory(spec_dir):
    path = spec_dir(user_prompt_file="prompts")
    error = refused(load_scenario, path)
    assert error.field == "user_prompt_file" and "prompts is a directory, not a file" in error.problem


def test_unreadable_prompt(spec_dir, monkeypatch):
    path = spec_dir()
    original = Path.open

    def deny(self, *args, **kwargs):
        if self.name == "user.md":
            raise PermissionError(13, "Permission denied")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", deny)
    error = refused(load_scenario, path)
    assert error.field == "user_prompt_file" and "user.md cannot be read (permission denied)" in error.problem


def test_instructed_probe_prompt_needs_the_conversation_slot(spec_dir, tmp_path):
    (tmp_path / "prompts" / "user.md").write_text("Write the next user message.\n")
    error = refused(load_scenario, spec_dir())
    assert error.field == "user_prompt_file" and "{conversation}" in error.problem and "{conversation}" in error.fix


def test_raw_only_probe_does_not_need_the_conversation_slot(spec_dir, tmp_path):
    (tmp_path / "prompts" / "user.md").write_text("Write the next user message.\n")
    assert load_scenario(spec_dir(user_modes=["raw"])).user_prompt == "Write the next user message.\n"


def write_judge(root: Path, prompt: str) -> Path:
    """An llm judge spec next to its prompt and an agent spec."""
    (root / "judge.md").write_text(prompt)
    write_yaml(root / "agent.yaml", {"name": "a", "backend": "scripted", "model": "m", "outputs": ["x"]})
    return write_yaml(root / "judge.yaml", {"name": "j", "kind": "llm", "task": "followup", "prompt_file": "judge.md",
                                            "prompt_version": "j-1", "agent": "agent.yaml"})


def test_judge_prompt_without_user_turn_fails_at_load(tmp_path):
    path = write_judge(tmp_path, "Question: {question}\nAnswer: {answer}\nVerdict?\n")
    error = refused(load_judge, path)
    assert error.path == str(path) and error.field == "prompt_file"
    assert "lacks the slot {user_turn}" in error.problem and "add {user_turn}" in error.fix


def test_judge_prompt_with_every_slot_loads(tmp_path):
    judge = load_judge(write_judge(tmp_path, "{labels}\n{question}\n{answer}\n{user_turn}\n"))
    assert judge.prompt.endswith("{user_turn}\n") and judge.agent.spec.name == "a"


@pytest.mark.parametrize(("field", "value"), [("dataset", "d" * 10**5), ("temperatures", "h" * 10**5), ("kind", "k" * 10**5)])
def test_huge_value_is_cut_in_the_message(spec_dir, field, value):
    error = refused(load_scenario, spec_dir(**{field: value}))
    assert error.field == field and value[:30] in error.problem and value[:100] not in str(error)


def test_cut_keeps_short_values_and_elides_long_ones():
    assert cut("hot") == "'hot'"
    long = cut(["x" * 1000] * 1000)
    assert len(long) <= 80 and long.startswith("['xx") and "..." in long


def test_non_utf8_gold_file(tmp_path):
    gold = tmp_path / "gold.jsonl"
    row = {"question": "q", "assistant": "a", "user_turn": "u", "label": "genuine_followup"}
    gold.write_bytes(json.dumps(row).encode() + b"\n" + LATIN1)
    error = refused(read_gold, gold)
    assert error.path == str(gold) and "not UTF-8 text (byte 0xe9 on line 2)" in error.problem


def test_gold_line_that_is_not_an_object(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("[1, 2]\n")
    error = refused(read_gold, gold)
    assert error.path == f"{gold}:1" and "not a JSON object" in error.problem


def test_read_text_keeps_text_and_normalises_newlines(tmp_path):
    path = tmp_path / "p.md"
    path.write_bytes("é\r\nline\rend".encode())
    assert read_text(path) == "é\nline\nend"


@pytest.mark.parametrize("command", ["run", "show"])
@pytest.mark.parametrize("make", [alias_bomb, duplicate_keys])
def test_cli_reports_hostile_spec_in_one_line(spec_dir, tmp_path, command, make):
    path = make(spec_dir())
    args = [command, str(path)] + (["--store", str(tmp_path / "s.sqlite")] if command == "run" else [])
    start = time.perf_counter()
    out = run_cli(*args, timeout=60)
    assert time.perf_counter() - start < 10
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert path.name in out.stderr and "Fix:" in out.stderr and len(out.stderr) < 1000


def test_overlong_agent_name_is_a_spec_error(spec_dir):
    error = refused(load_scenario, spec_dir(assistant="a" * 100_000))
    assert error.field == "assistant" and "no agent spec 'aaa" in error.problem


async def test_import_labels_reports_a_non_utf8_file(spec_dir, store, tmp_path):
    backend = ScriptedBackend(lambda r: "Why 12?")
    backends = {"assistant": backend, "user": backend}
    summary = await run_scenario(load_scenario(spec_dir()), store, backends=backends, show_progress=False)
    labels = tmp_path / "labels.jsonl"
    labels.write_bytes(LATIN1)
    out = CliRunner().invoke(app, ["import-labels", summary.run_id, str(labels), "--annotator", "x", "--store", str(store.path)])
    assert out.exit_code == 2 and "Traceback" not in out.output
    assert "labels.jsonl" in out.output and "not UTF-8 text" in out.output and "Fix:" in out.output
