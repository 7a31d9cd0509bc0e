"""The built-in judges (`judges/*.yaml`) and which are prompted, read without importing any judge or spec model.

What `--help` and error messages list, so a judge spec added to the folder is offered without editing either. A
built-in spec is prompted when it names its `prompt_file`, which every prompted kind requires
(JudgeKindEntry.requires), so building the command line's help imports no judge module and no pydantic spec model.
"""

from __future__ import annotations

from functools import lru_cache

import yaml

from testbed.specs.files import builtin_dir
from testbed.specs.registries import JUDGE_KINDS


def builtin_judges(*, prompted: bool | None = None) -> dict[str, str]:
    """The built-in judge specs naming a registered judge kind: name → kind, in name order; with `prompted`, only the
    judges whose kind is (or is not) prompted. A spec that is not readable YAML is left out here; loading it says why."""
    return {name: kind for name, (kind, is_prompted) in _builtin_specs().items()
            if prompted is None or is_prompted == prompted}


def kind_is_prompted(kind: str) -> bool:
    """Whether a registered judge kind is prompted: read off a built-in spec of that kind when there is one (no
    import), else off its entry (a plug-in kind's module is imported then)."""
    known = {k: is_prompted for k, is_prompted in _builtin_specs().values()}
    return known[kind] if kind in known else JUDGE_KINDS.entry(kind).prompted


@lru_cache(maxsize=1)
def _builtin_specs() -> dict[str, tuple[str, bool]]:
    """Read once per process: typer builds every option's help from it when the command line is built."""
    found = {}
    for path in sorted(builtin_dir("judges").glob("*.yaml")):
        try:
            data = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except (OSError, yaml.YAMLError):
            continue
        kind = data.get("kind") if isinstance(data, dict) else None
        if kind in JUDGE_KINDS:
            found[path.stem] = (kind, "prompt_file" in data)
    return found
