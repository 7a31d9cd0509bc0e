"""Strict parsing of a judge's reply: a verdict, or a reason why there is none."""

from __future__ import annotations

import json
import re

from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import Verdict

CODE_BLOCK = re.compile(r"^```(?:json)?\s*\n(.*)\n```$", re.DOTALL)


class UnparsableVerdict(ValueError):
    """The reply is not a valid verdict; the message says what was wrong, for the retry prompt."""


def json_object(reply: str, error: type[ValueError]) -> dict:
    """A reply that must be exactly one JSON object (optionally in a ```json block), as a dict; `error` with the
    reason when it is not one."""
    text = reply.strip()
    if block := CODE_BLOCK.match(text):
        text = block.group(1).strip()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise error("the JSON is not an object")
    return data


def parse_verdict(reply: str, task: str) -> Verdict:
    """Parse a reply that must be exactly one JSON object (optionally in a ```json block).

    Nothing is guessed: no label is fished out of prose, since a label found in free text is as
    likely to be quoted from the judged turn as chosen by the judge.
    """
    data = json_object(reply, UnparsableVerdict)
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise UnparsableVerdict("`reason` is not a string")
    t = taxonomy()
    if task == "followup":
        value = data.get("followup")
        if not isinstance(value, bool):
            raise UnparsableVerdict("`followup` must be true or false")
        return Verdict(None, value, reason[:200], reply)
    label = data.get("label")
    if label not in t.definitions:
        raise UnparsableVerdict(f"`label` must be one of {', '.join(t.labels)}")
    return Verdict(label, t.is_followup(label), reason[:200], reply)
