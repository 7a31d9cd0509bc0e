"""Per-episode scores of information gathering, recomputed from the stored transcript.

Nothing here needs a judge model: facts are matched by their aliases, questions by sentence form
and cues (testbed.scenarios.info_tasks). Replaying the release logic over the stored assistant
turns gives exactly the facts the simulated user was allowed to know at each turn.
"""

from __future__ import annotations

import math
from typing import Any

from testbed.loop.orchestrator import ASSISTANT_DONE
from testbed.scenarios.info_gathering import FactRelease, is_final_output
from testbed.scenarios.info_tasks import InfoTask, count_questions, mentioned_facts
from testbed.transcript import Message, generated_user_turns, is_assistant


def score_info_episode(messages: list[Message], task: InfoTask, termination: str | None) -> dict[str, Any]:
    """Recovered facts (which, at which turn), questions, questions per recovered fact, facts in the
    final output, whether the assistant answered before asking anything, and leaked facts."""
    release = FactRelease(task)
    recovered: dict[str, int] = {}
    leaks: list[tuple[int, str]] = []
    questions = 0
    assistant_turns = [m for m in messages if is_assistant(m)]
    generated = {m.turn_index for m in generated_user_turns(messages)}
    for m in messages:
        if is_assistant(m):
            if not is_final_output(m):
                questions += count_questions(m.content)
                release.observe(m)
        elif m.turn_index in generated:
            for fact_id in sorted(mentioned_facts(m.content, task)):
                if fact_id in release.released_at:
                    recovered.setdefault(fact_id, m.turn_index)
                else:
                    leaks.append((m.turn_index, fact_id))
    final = assistant_turns[-1].content if assistant_turns else ""
    in_final = mentioned_facts(final, task) if assistant_turns else set()
    return {
        "facts_total": len(task.facts),
        "facts_recovered": len(recovered),
        "recovered": recovered,
        "questions": questions,
        "questions_per_recovered_fact": questions / len(recovered) if recovered else math.nan,
        "facts_in_final_output": len(in_final),
        "final_output_facts": sorted(in_final),
        "answered": termination == ASSISTANT_DONE,
        "premature_answer": bool(assistant_turns) and is_final_output(assistant_turns[0]),
        "user_turns": len(generated),
        "leaked_facts": len(leaks),
        "leaks": leaks,
    }
