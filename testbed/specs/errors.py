"""One clear message per bad spec: which file, which field, what is wrong, what to do."""

from __future__ import annotations

import reprlib
from pathlib import Path

from pydantic import ValidationError

_FIELD_LIMIT, _TEXT_LIMIT = 120, 500


def cut_text(text: str, limit: int = 80) -> str:
    """`text` if it has at most `limit` characters, else its start and an ellipsis, `limit` in all."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "\u2026"


def cut(value: object, limit: int = 80) -> str:
    """A repr of an untrusted value for a message, at most `limit` characters; long ones are elided.

    Built with `reprlib`, so a huge string or nested list is never rendered in full.
    """
    short = reprlib.Repr()
    short.maxstring = short.maxother = short.maxlong = limit
    short.maxlevel, short.maxlist, short.maxtuple, short.maxdict, short.maxset = 3, 8, 8, 8, 8
    return cut_text(short.repr(value), limit)


class SpecError(ValueError):
    """A spec that cannot be used; raised before any model is called.

    Field, problem and fix are cut to a bounded length, so no message carries a whole hostile value.
    """

    def __init__(self, path: Path | str, field: str, problem: str, fix: str):
        field, problem, fix = cut_text(field, _FIELD_LIMIT), cut_text(problem, _TEXT_LIMIT), cut_text(fix, _TEXT_LIMIT)
        self.path, self.field, self.problem, self.fix = str(path), field, problem, fix
        super().__init__(f"{path}: field `{field}`: {problem}. Fix: {fix}")


def spec_error_from_validation(path: Path | str, exc: ValidationError, model: type) -> SpecError:
    """Turn pydantic's first error into a SpecError that names the field and the fix."""
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "(top level)"
    kind = err["type"]
    value = err.get("input")
    if kind == "extra_forbidden":
        parent = _model_at(model, err["loc"][:-1])
        allowed = ", ".join(sorted(parent.model_fields)) if parent else "see the docs"
        return SpecError(path, loc, "unknown field", f"remove or rename it; allowed here: {allowed}")
    if kind == "missing":
        return SpecError(path, loc, "required field is missing", f"add `{err['loc'][-1]}:` to the spec")
    if kind == "value_error":
        msg = _cut_input(err["msg"].removeprefix("Value error, "), value)
        if msg.startswith("@"):
            field, _, msg = msg[1:].partition(" ")
            loc = ".".join([*(str(p) for p in err["loc"]), field])
        problem, _, fix = msg.partition(" | fix: ")
        return SpecError(path, loc, problem, fix or "correct the value")
    return SpecError(path, loc, f"{err['msg']} (got {cut(value)})", "give a value of the right type")


def _cut_input(message: str, value: object) -> str:
    if isinstance(value, (str, int, float, list, tuple)):
        whole = repr(value)
        if len(whole) > 80 and whole in message:
            return message.replace(whole, cut(value))
    return message


def _model_at(model: type, loc: tuple) -> type | None:
    current = model
    for part in loc:
        if isinstance(part, int):
            continue
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return None
        annotation = field.annotation
        candidates = [annotation, *getattr(annotation, "__args__", ())]
        current = next((c for c in candidates if hasattr(c, "model_fields")), None)
        if current is None:
            return None
    return current
