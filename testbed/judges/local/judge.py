"""The local judge: a deterministic, standard-library classifier of simulated-user turns.

It needs no model and no network, so it labels a whole store in seconds and serves as the
always-available baseline next to the LLM judges. The turn is treated as untrusted text:
judge-directed fragments are cut out first, and a turn that carried any is never a follow-up.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from testbed.conversation_context import Earlier
from testbed.judges.local import cues
from testbed.judges.local.conversation import conversation_features, with_conversation
from testbed.judges.local.features import Origin, TurnFeatures, context, measure, origin
from testbed.judges.local.rules import DEFAULT, Thresholds, decide
from testbed.judges.local.sanitize import neutralise
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput, Verdict
from testbed.specs.registries import JudgeKindEntry
from testbed.store.labels import JudgeIdentity

if TYPE_CHECKING:
    from testbed.judges.base import OnVerdict
    from testbed.judges.specs import ResolvedJudge

VERSION = "local-3"
"""Bumped whenever a rule or threshold changes, so stored labels say which rules made them."""

FOLLOWUP = taxonomy().followup_label
"""The one label that counts as a follow-up, from the taxonomy file."""

_MARKUP = "\"'*#>-•[]()`_~=|"
"""Markdown and quoting characters that may open a turn before its first word."""


def _strip_scaffolding(text: str, lower: str) -> str:
    """Remove role-play scaffolding, a leading `User:` tag and a contentless lead-in phrase.

    What is left is what the user says, judged without the wrapping; a lead-in goes only when a
    question follows it. `lower` is `text` lower-cased, for the cheap checks that keep most turns
    untouched.
    """
    if "’" in text:
        text = text.replace("’", "'")
    if "next message" in lower or "you are the user" in lower:
        text = cues.USER_NEXT.sub(" ", text)
    text = text.strip().lstrip(_MARKUP).rstrip().strip('"').strip()
    if ":" in text[:12]:
        m = cues.ROLE_PREFIX.match(text)
        if m:
            text = text[m.end():]
    if text[:1] in "BbAaWw":
        m = cues.FRAME_LEAD.match(text)
        if m and "?" in text[m.end():]:
            text = text[m.end():]
    return text


def classify(question: str, assistant: str, user_turn: str, thresholds: Thresholds = DEFAULT,
             context: Sequence[Earlier] = ()) -> Verdict:
    """Label one user turn given the request, the answer as shown and the conversation between them.

    A pure function of its inputs: equal inputs give equal verdicts, in any order or process.
    """
    verdict = analyse(question, assistant, user_turn, thresholds)[0]
    return with_conversation(verdict, conversation_features(user_turn, assistant, context)) if context else verdict


def analyse(question: str, assistant: str, user_turn: str, thresholds: Thresholds = DEFAULT) -> tuple[Verdict, TurnFeatures, bool, Origin]:
    """The verdict, the features the rules read, whether judge-directed text was cut out, and where the turn's words come from."""
    raw = user_turn or ""
    lower = raw.lower()
    tokens = cues.tokens(lower)
    token_set = set(tokens)
    cleaned = neutralise(raw, lower, token_set)
    text = _strip_scaffolding(cleaned.text, lower if cleaned.text is raw else cleaned.text.lower())
    ctx = context(question or "", assistant or "")
    feats = measure(text, ctx, tokens, token_set, lower) if text == raw else measure(text, ctx)
    label, reason = decide(feats, ctx, thresholds)
    if cleaned.injected:
        if label == FOLLOWUP:
            label, reason = "other", "judge-directed text; not a follow-up"
        elif feats.n_words == 0:
            reason = "only judge-directed text"
    return Verdict(label=label, followup=label == FOLLOWUP, reason=reason), feats, cleaned.injected, origin(feats, ctx)


LOCAL_COMMIT_EVERY = 2000
"""Verdicts the local judge's runner writes per transaction: the judge is cheap, the commits are not."""


class LocalJudge:
    """The `local` judge: the rule-based classifier behind the common judge interface (testbed.judges.base).

    `judge` and `judge_many` stay synchronous for callers that classify in-process (tests,
    benchmarks); `judge_all` is the interface's asynchronous form. `name` is the judge spec's name,
    under which the labels are stored.
    """

    name = "local"
    version = VERSION
    model = None
    commit_every = LOCAL_COMMIT_EVERY

    def __init__(self, name: str = "local"):
        self.name = name

    @property
    def identity(self) -> JudgeIdentity:
        """`name@local-N` with no model: the rules version alone says what made the labels."""
        return JudgeIdentity(self.name, self.version)

    def judge(self, item: JudgeInput) -> Verdict:
        """Verdict on one turn."""
        return classify(item.question, item.assistant, item.user_turn, context=item.context)

    def judge_many(self, items: Iterable[JudgeInput]) -> list[Verdict]:
        """Verdicts on many turns, in order; the pair cache makes shared questions cheap."""
        return [classify(i.question, i.assistant, i.user_turn, context=i.context) for i in items]

    async def judge_all(self, items: Sequence[JudgeInput], on_verdict: OnVerdict | None = None) -> list[tuple[Verdict, int]]:
        """Verdicts in order, each counted as one call; computed in-process, without a model."""
        out = []
        for i, item in enumerate(items):
            verdict = self.judge(item)
            if on_verdict is not None:
                on_verdict(i, verdict, 1)
            out.append((verdict, 1))
        return out


def build(resolved: ResolvedJudge, backend: object = None) -> LocalJudge:
    """The `local` judge kind's builder (see JUDGE_KINDS); it binds no model, so `backend` is ignored."""
    return LocalJudge(resolved.spec.name)


JUDGE_KIND = JudgeKindEntry("local", build)
"""The local classifier's entry in testbed.specs.registries.JUDGE_KINDS: no model, no prompt."""
