"""Episodes of a run as a pandas frame: one row per episode with its question and user turn."""

from __future__ import annotations

import re

import pandas as pd

from testbed.store import Store
from testbed.store.frames import episodes_df, messages_df
from testbed.store.records import CONDITIONS

__all__ = ["CONDITIONS", "episodes_frame", "normalise"]

_SPACE = re.compile(r"\s+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")


def normalise(text: str) -> str:
    """Case-folded text with whitespace collapsed and edge punctuation dropped, for identity tests."""
    return _EDGE.sub("", _SPACE.sub(" ", text.casefold()).strip())


def episodes_frame(store: Store, run_id: str) -> pd.DataFrame:
    """One row per episode: conditions, status, score, the question and the final user turn.

    The final user turn is the last generated user turn after the episode's last assistant
    message: in a probe, the one turn the simulated user wrote in reply to the answer.
    """
    episodes = episodes_df(store, run_id, exact=True)
    messages = messages_df(store, run_id, exact=True)[["episode_id", "turn_index", "role", "content", "completion_tokens", "generated_user_turn"]]
    users = messages[messages.role == "user"]
    question = users.groupby("episode_id").content.first().rename("question")
    assistant_turns = messages[messages.role == "assistant"]
    last_assistant = assistant_turns.groupby("episode_id").turn_index.max().rename("last_assistant_turn")
    later = messages[messages.generated_user_turn].merge(last_assistant, on="episode_id")
    later = later[later.turn_index > later.last_assistant_turn]
    final_user = later.groupby("episode_id").agg(
        user_turn=("content", "last"), user_turn_tokens=("completion_tokens", "last"), user_turn_index=("turn_index", "last")
    )
    frame = episodes.merge(question, on="episode_id", how="left").merge(final_user, on="episode_id", how="left")
    frame["user_turn_words"] = frame.user_turn.fillna("").str.split().str.len()
    frame["identical_to_question"] = [
        isinstance(u, str) and isinstance(q, str) and normalise(u) == normalise(q) and bool(normalise(q))
        for u, q in zip(frame.user_turn, frame.question)
    ]
    return frame
