"""Read the files specs are made of, refusing hostile ones with one SpecError each and quickly.

Every spec, persona set, task set, prompt and label file is read through `read_text`: a size
bound, UTF-8 only, and a message (not a traceback) for a missing, unreadable or directory path.
YAML goes through `parse_yaml`, which composes the node graph first and refuses alias bombs,
self-referencing aliases and duplicate keys before anything is built from it.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import yaml

from testbed.specs.errors import SpecError, cut, cut_text

MAX_FILE_BYTES = 512 * 1024
MAX_LABEL_BYTES = 200_000_000
MAX_ALIAS_VALUES = 100_000
_MERGE_TAG = "tag:yaml.org,2002:merge"
_SATURATE = 10**12


def read_text(
    path: Path,
    *,
    named_by: tuple[Path, str] | None = None,
    what: str = "file",
    max_bytes: int = MAX_FILE_BYTES,
) -> str:
    """The UTF-8 text of `path`, with universal newlines, or a SpecError saying what to do.

    `named_by` is the spec and field that name the file (a prompt, a task set): the error is then
    reported there, naming the file; otherwise it is reported on the file itself.
    """
    owner, field = named_by or (path, "(file)")
    subject = f"{what} {cut_text(str(path), 200)}" if named_by else f"the {what}"

    def refuse(problem: str, fix: str) -> SpecError:
        return SpecError(owner, field, f"{subject} {problem}", fix)

    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            raise refuse("is a directory, not a file", "name a file inside it, or correct the path")
        if not stat.S_ISREG(info.st_mode):
            raise refuse("is not a regular file", "point at an ordinary file")
        if info.st_size > max_bytes:
            raise _too_big(refuse, info.st_size, max_bytes)
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        where = " (relative to this spec)" if named_by else ""
        raise refuse("does not exist", f"create it or correct the path{where}") from None
    except PermissionError:
        raise refuse("cannot be read (permission denied)", "make it readable (chmod a+r) or use a readable copy") from None
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or type(exc).__name__})", "check the path and the file") from None
    if len(data) > max_bytes:
        raise _too_big(refuse, len(data), max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise refuse(f"is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line})", "save it with UTF-8 encoding") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _too_big(refuse, size: int, limit: int) -> SpecError:
    return refuse(f"is {size:,} bytes, over the {limit:,}-byte limit", "shorten it or split it into several files")


def parse_yaml(text: str, path: Path) -> Any:
    """The data of a one-document YAML text, or a SpecError naming `path` and the line at fault."""
    try:
        return yaml.load(text, Loader=_Loader)
    except _Refused as exc:
        raise SpecError(path, exc.field, exc.problem, exc.fix) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(syntax)"
        raise SpecError(path, where, f"not valid YAML: {cut_text(_yaml_problem(exc), 200)}", "fix the YAML syntax") from None
    except RecursionError:
        raise SpecError(path, "(syntax)", "the YAML is nested too deeply", "flatten the structure") from None


def _yaml_problem(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    if context:
        problem = f"{context}{f' (line {context_mark.line + 1})' if context_mark else ''}: {problem}"
    return " ".join(problem.split())


class _Refused(Exception):
    def __init__(self, field: str, problem: str, fix: str):
        super().__init__(problem)
        self.field, self.problem, self.fix = field, problem, fix


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """yaml's safe loader, checking the composed graph before constructing anything."""

    def get_single_data(self) -> Any:
        node = self.get_single_node()
        if node is None:
            return None
        _check_graph(node)
        return self.construct_document(node)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(None, None, f"cannot read this value ({exc})", node.start_mark) from None


def _check_graph(root: yaml.Node) -> None:
    """Refuse cycles, duplicate keys and aliases that expand the document by more than MAX_ALIAS_VALUES.

    A depth-first walk over the composed graph, each node once: a collection's expanded size is
    one plus its children's, so a node an alias refers to k times counts k times.
    """
    if isinstance(root, yaml.ScalarNode):
        return
    sizes: dict[int, int] = {}
    scalars: set[int] = set()
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, list | None]] = [(root, None)]
    while stack:
        node, children = stack.pop()
        key = id(node)
        if children is not None:
            open_.discard(key)
            sizes[key] = min(_SATURATE, 1 + sum(sizes.get(id(child), 1) for child in children))
            continue
        if key in sizes:
            continue
        if key in open_:
            raise _Refused(f"line {node.start_mark.line + 1}", "a YAML alias refers to a value that contains it",
                           "write the value out instead of the alias")
        if isinstance(node, yaml.MappingNode):
            _check_keys(node)
            children = [part for pair in node.value for part in pair]
        else:
            children = node.value
        open_.add(key)
        stack.append((node, children))
        for child in children:
            if isinstance(child, yaml.ScalarNode):
                scalars.add(id(child))
            else:
                stack.append((child, None))
    if sizes[id(root)] > len(sizes) + len(scalars) + MAX_ALIAS_VALUES:
        raise _Refused("(aliases)", f"YAML aliases expand to more than {MAX_ALIAS_VALUES:,} values",
                       "write the values out or remove the aliases (*name)")


def _check_keys(node: yaml.MappingNode) -> None:
    seen: dict[tuple[str, str], yaml.Node] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        first = seen.setdefault((key_node.tag, key_node.value), key_node)
        if first is not key_node:
            raise _Refused(f"line {key_node.start_mark.line + 1}",
                           f"key {cut(key_node.value)} appears twice in one mapping (first on line {first.start_mark.line + 1})",
                           "keep one of them: the later one would silently replace the earlier")


SWEEP = "sweep"
"""The `kind:` of a sweep file."""


def is_sweep(data: dict) -> bool:
    """True when a spec file's data declares `kind: sweep`: the testbed's one test of "is this a sweep?"."""
    return data.get("kind") == SWEEP


PACKAGE_ROOT = Path(__file__).resolve().parents[1]
"""The testbed package's folder."""


def builtin_dir(kind: str) -> Path:
    """Where built-in specs of a kind live: inside the wheel, or at the checkout's top level."""
    packaged = PACKAGE_ROOT / "_builtin" / kind
    return packaged if packaged.is_dir() else PACKAGE_ROOT.parent / kind
