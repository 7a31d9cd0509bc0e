"""How fast, and how clearly, each hostile file of issue 7 fails through the installed command.

    .venv/bin/python benchmarks/bad_inputs.py        # one line per case: seconds, exit code, message

Every case must end in under 2 s with exit code 2, one `error:` line naming the file, and no
traceback. `testbed --help` is timed first: the interpreter's start-up is part of every figure.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TESTBED = [str(Path(sys.executable).parent / "testbed")]


def bomb(levels: int = 9) -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    for i in range(1, levels):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{','.join([prev] * 9)}]")
    return "kind: probe\nname: bomb\n" + "\n".join(lines) + f"\ndataset: *a{levels - 1}\n"


def cases(tmp: Path) -> list[tuple[str, list[str]]]:
    agent = {"name": "a", "backend": "vllm", "model": "embedded"}
    probe = {"kind": "probe", "name": "p", "dataset": "gsm8k", "assistant": "agent.yaml", "user": "agent.yaml",
             "user_modes": ["instructed"], "user_prompt_file": "user.md"}
    (tmp / "agent.yaml").write_text(yaml.safe_dump(agent))
    (tmp / "user.md").write_text("{conversation}\nNow you are the user.")
    (tmp / "bomb.yaml").write_text(bomb())
    (tmp / "dup.yaml").write_text(yaml.safe_dump(probe) + "dataset: ifeval\n")
    (tmp / "latin1.yaml").write_bytes(yaml.safe_dump(probe).encode() + "description: caf\xe9\n".encode("latin-1"))
    (tmp / "folder.yaml").mkdir(exist_ok=True)
    (tmp / "sys-latin1.md").write_bytes(b"You are helpful \xff\xfe")
    (tmp / "agent-latin1.yaml").write_text(yaml.safe_dump({**agent, "system_prompt_file": "sys-latin1.md"}))
    (tmp / "sys-prompt.yaml").write_text(yaml.safe_dump({**probe, "assistant": "agent-latin1.yaml"}))
    (tmp / "prompts-dir").mkdir(exist_ok=True)
    (tmp / "prompt-dir.yaml").write_text(yaml.safe_dump({**probe, "user_prompt_file": "prompts-dir"}))
    (tmp / "no-slot.md").write_text("Is this a follow-up? {question} {answer}")
    (tmp / "judge.yaml").write_text(yaml.safe_dump({"name": "j", "kind": "llm", "task": "followup", "prompt_file": "no-slot.md",
                                                    "prompt_version": "v1", "agent": str(tmp / "agent.yaml")}))
    (tmp / "gold.jsonl").write_bytes(b'{"question": "q\xff"}\n')
    (tmp / "huge.yaml").write_text(yaml.safe_dump({**probe, "dataset": "x" * 200_000}))
    return [
        ("YAML alias bomb (765-byte class)", ["run", str(tmp / "bomb.yaml")]),
        ("duplicate YAML key", ["show", str(tmp / "dup.yaml")]),
        ("non-UTF-8 spec", ["run", str(tmp / "latin1.yaml")]),
        ("spec path is a directory", ["run", str(tmp / "folder.yaml")]),
        ("non-UTF-8 system prompt", ["show", str(tmp / "sys-prompt.yaml")]),
        ("prompt path is a directory", ["show", str(tmp / "prompt-dir.yaml")]),
        ("judge prompt without {user_turn}", ["eval-judge", "--judge", str(tmp / "judge.yaml"), str(tmp / "gold.jsonl")]),
        ("non-UTF-8 gold/label file", ["eval-judge", "--judge", "local", str(tmp / "gold.jsonl")]),
        ("200 kB value in a field", ["show", str(tmp / "huge.yaml")]),
        ("mistyped store path", ["report", "some-run", "--store", str(tmp / "typo.sqlite")]),
    ]


def timed(args: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    proc = subprocess.run([*TESTBED, *args], capture_output=True, text=True, cwd=ROOT, timeout=120)
    return time.perf_counter() - started, proc


def main() -> int:
    startup, _ = timed(["--help"])
    print(f"testbed --help (start-up alone): {startup:.2f} s")
    worst, bad = 0.0, 0
    with tempfile.TemporaryDirectory() as folder:
        for name, args in cases(Path(folder)):
            seconds, proc = timed(args)
            message = proc.stderr.strip().splitlines()[0] if proc.stderr.strip() else "(no message)"
            ok = proc.returncode == 2 and "Traceback" not in proc.stderr + proc.stdout and seconds < 2 and len(proc.stderr) < 2000
            worst, bad = max(worst, seconds), bad + (not ok)
            print(f"{'ok ' if ok else 'BAD'} {seconds:5.2f} s  exit {proc.returncode}  {name}: {message[:150].replace(folder, '$TMP')}")
    print(f"slowest {worst:.2f} s; {bad} case(s) outside the target")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
