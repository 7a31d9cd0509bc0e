"""Keep API keys out of everything the testbed stores or prints.

A server may echo request headers in its error bodies, and a provider SDK may quote them in its
exceptions. Every key a backend reads from the environment is registered here, and every text
that reaches the store, a log line or the terminal from outside the testbed passes `redact`.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"
_MIN_SECRET = 6
_secrets: set[str] = set()
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=:-]{4,}")
_KEY_FIELD = re.compile(r"""(?i)((?:api[-_]?key|x-api-key|authorization)["']?\s*[:=]\s*["']?)(?!bearer\b|basic\b)([^\s"',;}]{4,})""")


def register_secret(value: str | None) -> None:
    """Remember a key so that `redact` removes it wherever it appears (short values are ignored)."""
    if value and len(value) >= _MIN_SECRET:
        _secrets.add(value)


def redact(text: str) -> str:
    """The text with registered keys, `Bearer …` tokens and `api_key=…` values replaced by [REDACTED]."""
    if not text:
        return text
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _KEY_FIELD.sub(lambda m: m.group(1) + REDACTED, text)


def redact_secrets_only(text: str) -> str:
    """Generated text with registered keys removed and nothing else changed (it is stored as generated)."""
    if not _secrets or not text:
        return text
    for secret in _secrets:
        if secret in text:
            text = text.replace(secret, REDACTED)
    return text
