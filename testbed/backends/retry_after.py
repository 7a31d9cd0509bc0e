"""How long a server asked the client to wait (`Retry-After`: seconds or an HTTP date)."""

from __future__ import annotations

from datetime import datetime, timezone
from email.utils import parsedate_to_datetime


def retry_after_s(value: str | None) -> float:
    """Seconds to wait before retrying, 0 when the header is absent or unreadable."""
    if not value:
        return 0.0
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return 0.0
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return max(0.0, seconds) if seconds == seconds else 0.0
