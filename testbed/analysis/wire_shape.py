"""How a framework presented the conversation to a model, read off the wire log.

For one recorded request: the roles (and `name`s) of its messages, which role the requester's own
earlier turns had, where the opening task text sat, the system prompt it got and the sampling
fields it sent. `compare` puts these side by side for the same turn of the same episode.
"""

from __future__ import annotations

from testbed.store import Store, WireRecord
from testbed.transcript import SYSTEM, Message, is_user, request_text

EXCERPT = 70


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tag(m: dict) -> str:
    return f"{m.get('role')}[{m['name']}]" if m.get("name") else str(m.get("role"))


def request_shape(record: WireRecord, transcript: list[Message]) -> dict:
    """The shape of one request, given the episode's stored messages."""
    sent = record.messages
    own = {m.content.strip() for m in transcript
           if m.role == record.role and m.turn_index < (record.turn_index or 0) and m.sampling is not None and m.content.strip()}
    task = request_text(transcript).strip()
    if is_user(record):
        own.add(task)
    own_roles = sorted({_tag(m) for m in sent if str(m.get("content") or "").strip() in own})
    task_at = next((f"message {i} as {_tag(m)}" for i, m in enumerate(sent) if task and task in str(m.get("content") or "")), "not sent")
    system = [str(m.get("content") or "") for m in sent if m.get("role") in (SYSTEM, "developer")]
    return {
        "role": record.role, "turn_index": record.turn_index, "messages": len(sent),
        "roles": ", ".join(_tag(m) for m in sent), "own_turns_as": ", ".join(own_roles) or "none sent",
        "task_at": task_at, "system_prompt": _excerpt(system[0]) if system else "none",
        "sampling": ", ".join(f"{k}={v}" for k, v in sorted(record.sampling.items())),
    }


def user_request(store: Store, run_id: str, episode_id: str, nth: int) -> tuple[WireRecord, list[Message]] | None:
    """The simulated user's `nth` successful request (0 first) in an episode, with the episode's messages."""
    records = [w for w in store.wire(run_id, episode_id) if is_user(w) and w.status == 200]
    return (records[nth], store.messages(run_id, episode_id)) if len(records) > nth else None


def compare_requests(store: Store, runs: dict[str, str], nth: int = 1) -> tuple[str | None, list[dict]]:
    """For the first episode every run finished and recorded, the shape of the simulated user's `nth` request in each
    run (the second by default: the first that can show the user's own earlier turns)."""
    shared: set[str] | None = None
    for run_id in runs.values():
        ids = {eid for eid, records in store.wire_episodes(run_id).items() if sum(is_user(w) for w in records) > nth}
        ids &= store.done_episode_ids(run_id)
        shared = ids if shared is None else shared & ids
    if not shared:
        return None, []
    episode = sorted(shared)[0]
    rows = []
    for framework, run_id in runs.items():
        found = user_request(store, run_id, episode, nth)
        if found is not None:
            rows.append({"framework": framework, **request_shape(*found)})
    return episode, rows
