"""Prompt templates: `{slot}` placeholders filled in one pass, so filled-in text is never re-read as a slot."""

from __future__ import annotations

import re

CONVERSATION_SLOT = "{conversation}"
"""Where an instructed user prompt receives the conversation so far."""


def fill_slots(template: str, values: dict[str, str], *, required: tuple[str, ...] = ()) -> str:
    """Replace `{name}` for every name in `values`; other braces (JSON examples) stay as they are.

    One regex pass means a value that itself contains `{name}` (an untrusted turn, say) is inserted
    verbatim. A required slot missing from the template is a ValueError naming it.
    """
    missing = [name for name in required if "{" + name + "}" not in template]
    if missing:
        raise ValueError(f"the prompt template lacks the slots {', '.join('{' + m + '}' for m in missing)}")
    if not values:
        return template
    pattern = re.compile(r"\{(" + "|".join(re.escape(k) for k in values) + r")\}")
    return pattern.sub(lambda m: values[m.group(1)], template)
