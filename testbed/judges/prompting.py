"""Build a judge's messages: the prompt template, the taxonomy, the fenced conversation."""

from __future__ import annotations

from testbed.control_tokens import GENERIC, ControlTokens
from testbed.conversation_context import rendered
from testbed.judges.fence import fence
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput
from testbed.templates import fill_slots


NO_CONTEXT = "(none: this is the user's first reply)"
"""What the conversation slot holds for a turn with nothing between the request and the answer."""


def label_list() -> str:
    """The labels and their definitions as a Markdown list, from the one taxonomy file."""
    t = taxonomy()
    return "\n".join(f"- `{name}`: {t.definitions[name]}" for name in t.labels)


def render_prompt(template: str, item: JudgeInput, tokens: ControlTokens = GENERIC) -> str:
    """Fill the template's slots in one pass, so text inside a fenced slot is never re-read as a slot.

    The conversation before the turn (`item.context`) fills `{conversation}`, fenced like the rest; a template without
    that slot (one written before judges read the conversation) still works. The judged texts have the judge model's control tokens (`tokens`; the generic set unless the
    caller knows the model) neutralised before fencing: a fence holds only at the string level, and
    `<|im_end|>` inside it would still close the judge's message once the server applies its template.
    """
    values = {
        "labels": label_list(),
        "question": fence(tokens.neutralise(item.question), "QUESTION"),
        "conversation": fence(tokens.neutralise(rendered(item.context)) if item.context else NO_CONTEXT, "EARLIER"),
        "answer": fence(tokens.neutralise(item.assistant), "ANSWER"),
        "user_turn": fence(tokens.neutralise(item.user_turn), "USER_TURN"),
    }
    return fill_slots(template, values, required=("question", "answer", "user_turn"))


def verdict_schema(task: str) -> dict:
    """The JSON schema a judge's reply must follow, for structured output and for strict parsing."""
    if task == "followup":
        props = {"followup": {"type": "boolean"}}
    else:
        props = {"label": {"type": "string", "enum": list(taxonomy().labels)}}
    props["reason"] = {"type": "string", "maxLength": 200}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}
