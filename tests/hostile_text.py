"""Text that would drive a terminal if printed raw, and a store whose every field a view shows holds it.

Every view of the testbed is fed this one corpus (tests/cli/test_hostile_text.py,
tests/replay/test_hostile_replay.py); none may let an escape sequence, a C1 control, a BEL or a
bidi control through, and each must show the visible marks `testbed.terminal_text.neutralised` makes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from helpers import REPO, write_yaml
from testbed.backends.base import BackendError
from testbed.backends.scripted import ScriptedBackend
from testbed.store import EpisodeKey, EpisodeOutcome, Store, WireRecord
from testbed.transcript import Message

HOSTILE = ("\x1b]0;PWNED-TITLE\x07"
           "\x1b]2;SECOND-TITLE\x07"
           "\x1b]8;;http://example.invalid/\x1b\\click\x1b]8;;\x1b\\"
           "\x1b]52;c;aGVsbG8=\x07"
           "\x1b[2J\x1b[31mred"
           "\x1bPq#0;2;0;0;0\x1b\\"
           "bell\x07nul\x00cr\rafter"
           " \u202eevil\u202c zwj\u200dx c1\u009b31m")
"""OSC 0/2/8/52, CSI (clear screen, red), DCS, BEL, NUL, a lone CR, a bidi override, a zero-width joiner, a C1 CSI."""

FORBIDDEN = frozenset("\x1b\x07\x00\r\u009b\u202e\u202c\u200d")
"""Characters that must never reach the output raw."""

MARKS = ("␛]0;PWNED-TITLE", "␛]52;c;aGVsbG8=", "␛[2J", "<U+202E>", "<U+200D>", "<U+009B>")
"""Visible marks of the corpus that every view must show (rich drops BEL and CR from `Text` it builds itself,
so those two are asserted only where the testbed builds the text)."""

BUILT_MARKS = ("␇", "␀", "␍")
"""Marks of the characters rich would drop: seen where the testbed neutralises the text before rich has it."""

STORED_MARKS = ("␇", "\\x00", "␍")
"""The built marks of text that went through the store, which keeps a NUL as the escape `\\x00` (testbed.store.text)."""

HOSTILE_MODEL = "model\x1b]0;MODEL-TITLE\x07\u202e"
"""A model name that is an attack too: it reaches the report's tables and the replay's columns."""

MODEL_MARKS = ("␛]0;MODEL-TITLE", "<U+202E>")
"""What `HOSTILE_MODEL` shows as wherever a table or a caption names the models."""


def assert_neutralised(output: str, *, marks: tuple[str, ...] = MARKS) -> None:
    """No forbidden character is in `output`, and every mark is."""
    raw = sorted({f"U+{ord(c):04X}" for c in output if c in FORBIDDEN})
    assert not raw, f"raw control characters reached the output: {raw}\n{output!r}"
    missing = [m for m in marks if m not in output]
    assert not missing, f"neutralised marks missing: {missing}\n{output}"


def _user_replies():
    """The simulated user's turns hold the corpus; its fifth call fails with the corpus in the server's error body."""
    calls = {"n": 0}

    def reply(request) -> str:
        calls["n"] += 1
        if calls["n"] == 5:
            raise BackendError(f"HTTP 503 from the user model: {HOSTILE}")
        return f"Why is that right? {HOSTILE}"

    return reply


def hostile_backends() -> dict[str, ScriptedBackend]:
    """Scripted assistant and user whose every reply (and one error) holds the corpus."""
    return {"assistant": ScriptedBackend(lambda r: f"The answer is 42. {HOSTILE}"), "user": ScriptedBackend(_user_replies())}


def hostile_spec(folder: Path) -> Path:
    """A dialogue scenario of 3 items whose agents are named with `HOSTILE_MODEL`."""
    (folder / "prompts").mkdir(exist_ok=True)
    (folder / "prompts" / "user.md").write_text((REPO / "scenarios/prompts/user-dialogue.md").read_text())
    write_yaml(folder / "scripted.yaml", {"name": "s", "backend": "scripted", "model": HOSTILE_MODEL, "outputs": ["x"],
                                          "concurrency": 1})
    return write_yaml(folder / "hostile.yaml", {
        "kind": "dialogue", "name": "hostile-dlg", "opening": "dataset", "dataset": "gsm8k", "items": {"limit": 3},
        "assistant": "scripted.yaml", "user": "scripted.yaml", "user_modes": ["instructed"],
        "user_prompt_file": "prompts/user.md", "temperatures": [0.0], "max_tokens": 16, "max_user_turns": 3,
        "end_marker": "[[END]]", "token_budget": 10_000})


WIRE_RUN = "wire-run"


def _write_wire_run(store: Store) -> None:
    """A framework run (its scenario named with the corpus) with one episode whose wire log holds the corpus in a
    request, a reply and a server's error body."""
    store.begin_run(WIRE_RUN, scenario=f"scenario{HOSTILE}", kind="dialogue", spec={}, fingerprint="f", versions={},
                    git_revision=None, planned=1, framework="autogen")
    key = EpisodeKey("wire-episode", "item", "gsm8k", "a", HOSTILE_MODEL, "u", "um", "instructed", 0.0, 0, "none")
    messages = [Message("user", "opening", "dataset", 0),
                Message("assistant", f"reply {HOSTILE}", "assistant", 1, {"temperature": 0.0})]
    request = {"messages": [{"role": "user", "name": f"n{HOSTILE}", "content": f"asked {HOSTILE}"}], "temperature": 0.0}
    failed = WireRecord(0, "assistant", "chat/completions", request, 500, f"<html>{HOSTILE}</html>", None, None, 0.01, 0.0, 1)
    reply = {"choices": [{"message": {"content": f"reply {HOSTILE}"}}]}
    answered = WireRecord(1, "assistant", "chat/completions", request, 200, reply, 3, 4, 0.02, 0.0, 1)
    store.write_episode(WIRE_RUN, EpisodeOutcome(key, messages, "done", "max_turns", wire=(failed, answered)))


def build_hostile_store(folder: Path) -> tuple[Path, str]:
    """(store path, run id): a dialogue run with the corpus in its messages and in one errored episode's reason,
    labelled by the local judge, and a framework run with a wire log (`WIRE_RUN`)."""
    from testbed.judges.runner import judge_run
    from testbed.judges.specs import load_judge
    from testbed.running.runner import run_scenario
    from testbed.specs.loader import load_scenario

    path = folder / "hostile.sqlite"
    store = Store(path)
    scenario = load_scenario(hostile_spec(folder))
    summary = asyncio.run(run_scenario(scenario, store, backends=hostile_backends(), show_progress=False))
    asyncio.run(judge_run(store, summary.run_id, load_judge("local"), show_progress=False))
    _write_wire_run(store)
    store.close()
    return path, summary.run_id
