"""τ²-bench's taxonomy of simulated-user errors, in this project's words, and how the testbed's faults map onto it.

τ²-bench reviews its user simulator with an LLM that tags each faulty user turn with one or more error tags and one
severity. The tags and severities below are τ²'s names; the meanings are written for this project (no τ² text is
copied). Every fault the testbed knows, whether a rule flags it (testbed.scenarios.tau2.user_faults), a reviewer tags
it, or the fault-injection lab plants it, is counted under one of these tags, so rules, reviewer and lab measure the
same thing.
"""

from __future__ import annotations

USER_ERROR_TAGS = ("hallucination", "incorrect_interpretation", "guideline_violation", "revealed_info_early",
                   "inconsistent_behavior", "premature_termination", "missed_required_action", "wrong_sequence", "other")
"""τ²'s tags for a simulated user's error, in τ²'s order."""
TAG_MEANINGS = {
    "hallucination": "states a fact (an id, amount, name, date, device state) that its instructions do not give and "
                     "nothing it saw in the conversation or its own tool results shows",
    "incorrect_interpretation": "misreads what the agent said or what a tool result shows",
    "guideline_violation": "breaks its instructions or the simulation guidelines (speaks as the agent, asks for "
                           "something its scenario does not want, refuses what its scenario says to accept)",
    "revealed_info_early": "volunteers information from its instructions before the agent asked for it",
    "inconsistent_behavior": "contradicts something it said or did earlier in the conversation",
    "premature_termination": "ends the conversation, or accepts an unfinished outcome, while the agent was still "
                             "making progress on the task",
    "missed_required_action": "does not do something its instructions require of it (an action on its own device, "
                              "a detail it must give when asked)",
    "wrong_sequence": "does what its instructions ask in the wrong order",
    "other": "an error no other tag describes (say which in the reason)",
}
"""What each tag means, as reviewers, annotators and reports read it."""
SEVERITIES = ("critical_hindered", "critical_helped", "minor")
"""τ²'s severities of a simulated user's error."""
SEVERITY_MEANINGS = {
    "critical_hindered": "the error made the task harder or impossible for the agent",
    "critical_helped": "the error made the task easier than the scenario intends (the agent succeeded on help it "
                       "should not have had)",
    "minor": "an error that did not change how the episode turned out",
}
"""What each severity means."""
RULE_TAGS = {
    "premature_stop": "premature_termination",
    "revealed_early": "revealed_info_early",
    "invented_fact": "hallucination",
    "ungrounded_device_claim": "hallucination",
    "role_drift": "guideline_violation",
}
"""The τ² tag each fault kind of the rules (testbed.scenarios.tau2.user_faults.FAULT_KINDS) is counted under."""


def rule_tag(kind: str) -> str:
    """The τ² tag a rule's fault kind is counted under ("other" for a kind this table does not know)."""
    return RULE_TAGS.get(kind, "other")
