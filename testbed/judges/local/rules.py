"""The decision list of the local classifier: ordered rules from the most to the least certain cue.

Order follows the labelling guide's tie-breaks: what dominates the turn decides. Garbage and
loops come first (a loop that dominates is `degenerate` whatever it loops on), then speaking as
the assistant or planning (identity drift), then filler, and only then the three question-like
labels, told apart by where the turn's words come from: the question (`restate_question`), what
the answer dwells on (`genuine_followup`) or neither (`new_question`). Phrase cues are searched
only when the rule that needs them is reached, within the head of the turn. Thresholds are round
numbers chosen under grouped cross-validation, not fitted to decimals.
"""

from __future__ import annotations

from dataclasses import dataclass

from testbed.judges.local import cues
from testbed.judges.local.features import Context, TurnFeatures, origin
from testbed.judges.local.references import NARRATIVE_REF, refers_to_answer

CUE_WINDOW = 300
"""Characters at the head of a turn searched for phrase cues: where a reply shows what it does."""

REF_WINDOW = 200
"""Characters searched for references to the answer: a follow-up says early what it reacts to."""


@dataclass(frozen=True)
class Thresholds:
    """The numeric cut points of the rules, in one place so that validation can vary them.

    Shares are of the turn's trigrams (`*_tri_*`, `loop_rep3`) or content words (the rest).
    `loop_rep3`: repeated trigrams that make a loop. `echo_tri_a` / `restate_tri_q`: trigrams
    copied from the answer / question. `restate_q_frac`, `restate_ask_cover`: words from the
    question, and coverage of its request sentence, for a paraphrased restatement.
    `followup_a_only`: words found only in the answer that make a question about the answer.
    `dwell`: below it, the answer does not dwell on the turn's words (see `Origin`); with
    `new_novel_low` new words that makes a new question, as does `new_novel` on its own. An answer
    with fewer than `dwell_answer_words` topical words repeats almost nothing, so there dwell says
    nothing and a turn whose words are `short_answer_a_only` or more answer-only is not judged by it.
    Word counts bound filler, long rambling, statements that may still dispute the answer, and
    incoherent statements.
    """

    loop_rep3: float = 0.5
    echo_tri_a: float = 0.5
    restate_tri_q: float = 0.5
    restate_q_frac: float = 0.75
    restate_ask_cover: float = 0.5
    followup_a_only: float = 0.15
    dwell: float = 0.4
    new_novel_low: float = 0.3
    new_novel: float = 0.6
    dwell_answer_words: int = 30
    short_answer_a_only: float = 0.2
    filler_words: int = 8
    ramble_words: int = 40
    statement_words: int = 20
    incoherent_words: int = 12


DEFAULT = Thresholds()
"""The thresholds in use."""


def _is_filler(f: TurnFeatures, limit: int) -> bool:
    """A short reply made of courtesy words, or opened by one and adding at most a name or two.

    Nothing asked, no numbers: `OK, now do it for 5 apples` is a request, not filler.
    """
    if f.n_words == 0 or f.n_words > limit or "?" in f.text:
        return False
    extra = f.content - cues.FILLER_WORDS
    if not extra:
        return True
    first = cues.tokens(f.lower[:40])
    return bool(first) and first[0] in cues.FILLER_HEAD and len(extra) <= 2 and not any(w.isdigit() for w in extra)


def _short_reply(f: TurnFeatures, th: Thresholds) -> bool:
    """Short enough that a reference to the answer dominates it: a brief statement, or a question."""
    return f.n_words < th.statement_words or (f.n_words < th.ramble_words and (f.question or f.request))


def decide(f: TurnFeatures, ctx: Context, th: Thresholds = DEFAULT) -> tuple[str, str]:
    """The label and a short reason naming the cue that decided it."""
    if f.n_words == 0:
        return "degenerate", "empty turn"
    head, words = f.lower[:CUE_WINDOW], f.words
    if "<" in head or "|" in head or "[" in head:
        if any(mark in head for mark in cues.THINK_MARKS):
            return "meta_planning", "leaked reasoning channel"
        if any(mark in head for mark in cues.TEMPLATE_MARKS):
            return "degenerate", "leaked chat-template tokens"
    if cues.ROLE_LINE.found(head, words):
        return "degenerate", "leaked chat-template tokens"
    if f.latin < 0.5 and ctx.q_latin:
        return "degenerate", "text in another script than the request"
    if f.rep3 >= th.loop_rep3:
        return "degenerate", "repeated text dominates the turn"
    if cues.plans(head, words):
        return "meta_planning", "plans aloud how to respond"
    if cues.OFFER.found(head, words) or cues.ASSISTANT_TAG.found(head, words):
        return "echo_assistant", "assistant-style offer or refusal"
    if _is_filler(f, th.filler_words):
        return "short_filler", "brief courtesy with no content"
    if f.n_words < th.ramble_words and cues.SELF_META.found(head, words):
        return "meta_planning", "talks about its own role"
    if _short_reply(f, th) and refers_to_answer(head[:REF_WINDOW], words, ctx.q_text):
        return "genuine_followup", "refers to the answer directly"
    solving = cues.SOLVING.found(head, words)
    if (f.question or f.request) and f.n_words < th.ramble_words and not solving:
        return _question(f, ctx, th)
    if f.tri_q >= th.restate_tri_q and f.tri_q > f.tri_a:
        return "restate_question", "copies the question's wording"
    if f.tri_a >= th.echo_tri_a:
        return "echo_assistant", "copies the answer's wording"
    if solving:
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


def _question(f: TurnFeatures, ctx: Context, th: Thresholds) -> tuple[str, str]:
    """Tell a follow-up from a restatement and a new question by where its words come from."""
    if ctx.narrative and NARRATIVE_REF.found(f.lower, f.words):
        return "genuine_followup", "asks about a part of the story told"
    if f.tri_q >= th.restate_tri_q:
        return "restate_question", "copies the question's wording"
    if cues.VARIANT.found(f.lower, f.words):
        return "new_question", "poses a variant of the problem"
    o = origin(f, ctx)
    if o.a_only_frac < 0.3 and cues.GENERIC_ASK.found(f.lower, f.words):
        return "new_question", "generic question that stands alone"
    dwell_measurable = len(ctx.a_content) >= th.dwell_answer_words or o.a_only_frac < th.short_answer_a_only
    if dwell_measurable and o.dwell < th.dwell and o.novel_frac >= th.new_novel_low:
        return "new_question", "asks what the answer does not discuss"
    if o.novel_frac >= th.new_novel:
        return "new_question", "mostly words from neither question nor answer"
    if (
        f.q_frac >= th.restate_q_frac
        and o.ask_cover >= th.restate_ask_cover
        and o.novel_frac <= 0.15
        and o.a_only_frac < th.followup_a_only
    ):
        return "restate_question", "asks the question's own question again"
    return "genuine_followup", "asks about what the answer discusses"
