"""What a whole-conversation reviewer of a τ² user is shown beside the conversation: the user's instructions and the
simulation guidelines it was given, both read from the installed τ² package when the review runs (never stored).

The instructions are the task's user scenario (persona, reason for the call, what it knows and does not, how to
behave), as the user's prompt held it. The guidelines are the run's user prompt (the stored spec's `user_prompt`, the
text of its `user_prompt_file`) with τ²'s simulation guidelines in `{guidelines}` (those for a user with tools where
the domain gives it some) and a pointer to the instructions, shown apart, in `{scenario}`: what the run told its user.
"""

from __future__ import annotations

from types import SimpleNamespace

from testbed.specs.tau2 import domain_of
from testbed.store import Store
from testbed.store.frames import episodes_df

DEFAULT_USER_PROMPT = "{guidelines}\n\n<scenario>\n{scenario}\n</scenario>"
"""The user prompt of a run whose spec stored none (as the kind's runner fills it)."""
SCENARIO_SHOWN_APART = "(the user's instructions, shown apart above)"
"""What stands in the guidelines where the user's prompt held its instructions."""


def run_user_prompt(store: Store, run_id: str) -> str:
    """The user prompt template the run's user was given (its stored spec's), or the kind's default."""
    prompt = store.run(run_id).spec.get("user_prompt")
    return prompt if isinstance(prompt, str) and prompt.strip() else DEFAULT_USER_PROMPT


def review_contexts(store: Store, run_id: str) -> tuple[dict[str, tuple[str, str]], str]:
    """Each finished episode's (instructions, guidelines), for the episodes whose task the installed τ² has, and why
    the others have none ("" when none lacks them)."""
    from testbed.scenarios.tau2.domains import INSTALL, domain, tau2_installed
    from testbed.scenarios.tau2.prompts import user_prompt

    done = episodes_df(store, run_id, exact=True).query("status == 'done'")
    if done.empty:
        return {}, ""
    if not tau2_installed():
        return {}, f"τ² is not installed to read the users' instructions ({INSTALL})"
    template, out, lacking = run_user_prompt(store, run_id), {}, 0
    guidelines: dict[str, str] = {}
    for eid, dataset, item_id in done[["episode_id", "dataset", "item_id"]].itertuples(index=False, name=None):
        name = domain_of(dataset)
        task = domain(name).tasks.get(item_id) if name is not None else None
        if task is None:
            lacking += 1
            continue
        if name not in guidelines:
            guidelines[name] = user_prompt(template, SimpleNamespace(user_scenario=SCENARIO_SHOWN_APART),
                                           with_tools=bool(domain(name).user_tools))
        out[eid] = (str(task.user_scenario), guidelines[name])
    why = f"the installed τ² has no task for {lacking} of {len(done)} finished episodes" if lacking else ""
    return out, why
