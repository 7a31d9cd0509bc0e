"""Changes to the assistant answer as shown to the simulated user: do they read it at all?"""

from __future__ import annotations

EXPLICIT_QUESTION = "What do you think? Do you have any questions?"


def perturb(answer: str, perturbation: str) -> str:
    """The answer as the simulated user sees it under a perturbation.

    `truncation` keeps the first half (cut at a word boundary), so a reader should ask to finish;
    `explicit_question` appends a direct question, which invites a reply.
    """
    if perturbation == "none":
        return answer
    if perturbation == "truncation":
        half = answer[: len(answer) // 2]
        cut = half.rsplit(" ", 1)[0] if " " in half else half
        return cut.rstrip()
    if perturbation == "explicit_question":
        return f"{answer.rstrip()}\n\n{EXPLICIT_QUESTION}"
    raise ValueError(f"unknown perturbation {perturbation!r}")
