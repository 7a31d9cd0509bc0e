"""The decision list of the local classifier: ordered rules from the most to the least certain cue.

Order matters and follows the labelling guide's tie-breaks: what dominates the turn decides.
Garbage and loops come first (a loop that dominates is `degenerate` whatever it loops on), then
speaking as the assistant or planning (identity drift), then filler, and only then the three
question-like labels, told apart by where the turn's words come from: the question
(`restate_question`), the answer (`genuine_followup`) or neither (`new_question`).
Thresholds are round numbers chosen under grouped cross-validation, not fitted to decimals.
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.judges.local import cues
from testbed.judges.local.features import TurnFeatures


@dataclass(frozen=True)
class Thresholds:
    """The few numeric cut points of the rules, in one place so that validation can vary them."""

    loop_rep3: float = 0.5
    loop_top_share: float = 0.3
    loop_dup_lines: float = 0.5
    odd_tokens: int = 2
    echo_tri_a: float = 0.5
    restate_q_frac: float = 0.75
    restate_tri_q: float = 0.5
    followup_a_only: float = 0.15
    new_novel: float = 0.6
    new_novel_low: float = 0.3
    salience: float = 0.6
    restate_ask_cover: float = 0.75
    filler_words: int = 8
    ramble_words: int = 40
    incoherent_words: int = 12


DEFAULT = Thresholds()
"""The thresholds in use."""


@dataclass(frozen=True)
class Cues:
    """Phrase cues found in the turn (booleans), searched once per turn."""

    template: bool
    offer: bool
    solving: bool
    planning: bool
    self_meta: bool
    answer_ref: bool
    assistant_tag: bool
    generic: bool
    variant: bool


def _refers_to_answer(text: str, question: str) -> bool:
    """An answer-reference phrase that the turn did not simply copy from the question."""
    return any(m.group(0).lower() not in question for m in cues.ANSWER_REF.finditer(text))


def find_cues(text: str, question: str = "") -> Cues:
    """Search the phrase patterns in `text` (the neutralised turn); `question` is lower-cased."""
    return Cues(
        template=bool(cues.STRONG_TEMPLATE.search(text) or cues.ROLE_LINE.search(text)),
        offer=bool(cues.OFFER.search(text)),
        solving=bool(cues.SOLVING.search(text)),
        planning=bool(cues.PLANNING.search(text)),
        self_meta=bool(cues.SELF_META.search(text)),
        answer_ref=_refers_to_answer(text, question),
        assistant_tag=bool(cues.ASSISTANT_PREFIX.search(text)),
        generic=bool(cues.GENERIC_ASK.search(text)),
        variant=bool(cues.VARIANT.search(text)),
    )


def _is_filler(text: str, n_words: int, limit: int) -> bool:
    """A short reply made of courtesy words only, or opened by one with nothing asked."""
    if n_words == 0 or n_words > limit or "?" in text:
        return False
    words = cues.WORD.findall(text.lower())
    if all(w in cues.FILLER_WORDS for w in words):
        return True
    return words[0] in cues.FILLER_HEAD and n_words <= limit


def decide(f: TurnFeatures, c: Cues, th: Thresholds = DEFAULT) -> tuple[str, str]:
    """The label and a short reason naming the cue that decided it."""
    if f.n_words == 0:
        return "degenerate", "empty turn"
    if c.template:
        return "degenerate", "leaked chat-template tokens"
    if f.latin < 0.5:
        return "degenerate", "text in another script than the request"
    if f.n_words >= 12 and (f.rep3 >= th.loop_rep3 or f.dup_lines >= th.loop_dup_lines or f.top_share >= th.loop_top_share):
        return "degenerate", "repeated text dominates the turn"
    if f.odd_tokens >= th.odd_tokens:
        return "degenerate", "garbled tokens"
    if c.planning:
        return "meta_planning", "plans aloud how to respond"
    if c.offer or c.assistant_tag:
        return "echo_assistant", "assistant-style offer or refusal"
    if _is_filler(f.text, f.n_words, th.filler_words):
        return "short_filler", "brief courtesy with no content"
    if c.self_meta and f.n_words < th.ramble_words:
        return "meta_planning", "talks about its own role"
    if (f.question or f.request) and f.n_words < th.ramble_words and not c.solving:
        return _question(f, c, th)
    if f.tri_q >= th.restate_tri_q and f.tri_q > f.tri_a:
        return "restate_question", "copies the question's wording"
    if f.tri_a >= th.echo_tri_a:
        return "echo_assistant", "copies the answer's wording"
    if c.solving:
        return "echo_assistant", "solves the task itself"
    if f.n_words >= th.ramble_words:
        if f.a_frac >= 0.5:
            return "echo_assistant", "continues in the answer's terms"
        return "degenerate", "long off-topic rambling"
    if f.a_frac >= 0.5 or f.answer_numbers:
        return "echo_assistant", "states content of the answer"
    if f.n_words < 3 or f.n_words >= th.incoherent_words:
        return "degenerate", "fragment or incoherent statement"
    return "other", "no cue fits"


def _question(f: TurnFeatures, c: Cues, th: Thresholds) -> tuple[str, str]:
    """Tell a follow-up from a restatement and a new question by where its words come from."""
    if c.answer_ref:
        return "genuine_followup", "refers to the answer directly"
    if f.tri_q >= th.restate_tri_q:
        return "restate_question", "copies the question's wording"
    if c.variant:
        return "new_question", "poses a variant of the problem"
    if c.generic and f.a_only_frac < 0.3:
        return "new_question", "generic question that stands alone"
    if f.salience < th.salience and f.novel_frac >= th.new_novel_low:
        return "new_question", "asks what the answer does not discuss"
    if f.novel_frac >= th.new_novel:
        return "new_question", "mostly words from neither question nor answer"
    if f.q_frac >= th.restate_q_frac and f.ask_cover >= th.restate_ask_cover and f.novel_frac <= 0.15 and f.a_only_frac < th.followup_a_only:
        return "restate_question", "asks the question's own question again"
    return "genuine_followup", "asks about what the answer discusses"
