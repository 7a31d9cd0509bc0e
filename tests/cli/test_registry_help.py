"""The CLI's help lists the frameworks and judges that exist, read from their registries and the built-in judge specs."""

from __future__ import annotations

import subprocess
import sys

from testbed.judges.specs import builtin_judges
from testbed.specs.registries import JUDGE_KINDS

HELP_WITH_A_PLUGIN = """
import sys
from testbed.specs.registries import FRAMEWORKS
FRAMEWORKS.register("fakefw", "testbed.frameworks.catalogue:NATIVE")
from typer.testing import CliRunner
from testbed.cli import app
for command in sys.argv[1:]:
    print(CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "300"}).output)
    print("=====")
"""
"""A plug-in registers a framework before the command line is built (importing testbed.cli builds it)."""


def helps(*commands: str) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-c", HELP_WITH_A_PLUGIN, *commands], capture_output=True, text=True, check=True).stdout
    return dict(zip(commands, out.split("=====")))


def test_a_registered_framework_is_offered_by_run_and_compare():
    shown = helps("run", "compare")
    for command, text in shown.items():
        assert "fakefw" in text, f"`testbed {command} --help` does not list the registered framework"
    assert "native | autogen | langgraph | camel | tau2 | fakefw" in " ".join(shown["run"].split())


def test_judge_help_lists_every_built_in_judge_and_judge_kind():
    shown = helps("judge", "compare", "eval-judge")
    assert set(builtin_judges()) >= {"learned", "local", "followup", "failure-modes"}
    for command, text in shown.items():
        flat = " ".join(text.split())
        assert all(name in flat for name in builtin_judges()), command
        assert f"(kind {' | '.join(JUDGE_KINDS.names())})" in flat, command


def test_building_the_help_imports_no_judge_and_reads_each_judge_spec_once():
    """The judge lists in every option's help come from the built-in specs read once, not from importing the judges."""
    code = """
import sys
import yaml
reads = []
real = yaml.load
yaml.load = lambda *a, **k: reads.append(1) or real(*a, **k)
from typer.testing import CliRunner
from testbed.cli import app
assert CliRunner().invoke(app, ["--help"]).exit_code == 0
heavy = sorted(m for m in sys.modules if m in {"testbed.judges.llm_judge", "testbed.judges.local.judge",
                                                "testbed.judges.learned.judge", "testbed.specs.loader"})
print(len(reads), heavy)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(maxsplit=1)
    assert out[1].strip() == "[]", f"building the help imported {out[1].strip()}"
    assert int(out[0]) == len(builtin_judges()) + 2, "each judges/*.yaml is read once (the two label files too)"
