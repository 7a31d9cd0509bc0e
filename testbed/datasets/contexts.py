"""Real conversations as contexts: which ones a scenario takes, and what an item of such a dataset carries.

A *context* is a real conversation up to and including an assistant turn; its *reference* is the
real user turn that followed. A dataset of real conversations (its entry's `contexts` reader) gives
items whose `messages` are the context without its last assistant turn, and whose `reference`
holds that turn (`REAL_ANSWER`) and the real user's next turn (`HUMAN_TURN`), so a scenario can
show the real answer and keep the real next turn as the human reference.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

REAL_ANSWER = "answer"
"""Reference key: the real assistant turn that ends the context."""
HUMAN_TURN = "human_turn"
"""Reference key: the real user turn that followed the context (the human reference)."""
DEPTH = "depth"
"""Reference key: which exchange of its conversation the context ends at (1 = the first answer)."""
CONVERSATION = "conversation"
"""Reference key: the source's id of the conversation the context comes from."""


class ContextSelection(BaseModel):
    """Which contexts of a real-conversation dataset to take, beyond the usual limit and seed.

    The length caps keep contexts inside a small model's window; they also bias the sample
    towards short conversations, which a report on the selection should say.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    depth: int = Field(1, ge=1, le=50)
    """Contexts end at exchange 1 … `depth` of their conversation (1: only after the first answer)."""
    language: Literal["en", "any"] = "en"
    """`en`: the context's user turns and the reference read as English (testbed.datasets.language); `any`: no filter."""
    max_context_words: int = Field(400, ge=10, le=100_000)
    """Contexts whose messages (the real answer included) hold more words are skipped."""
    max_reference_words: int = Field(400, ge=1, le=100_000)
    """Contexts whose real next turn holds more words are skipped (pasted documents rather than replies)."""


def is_real_context(reference: dict) -> bool:
    """Whether an item's reference carries a real answer and the real next turn (a real-conversation context)."""
    return REAL_ANSWER in reference and HUMAN_TURN in reference
