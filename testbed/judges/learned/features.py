"""The learned judge's inputs: the rule classifier's measurements and verdict, and static embeddings.

Per turn: the local rules' features (overlap with the question and the answer, copied trigrams,
loops, question form, length, leaked judge-directed text) and their label as a one-hot; the
static MiniLM embedding of the turn; and its cosine similarity to the request and to the answer
(paraphrase-aware versions of the overlap features). Requests and answers repeat across a run's
turns, so their embeddings are computed once per text.

Two feature sets, named in each model's meta (`features`): `turn` (learned-1 to learned-3: the turn against the
request and the answer only, the rules read without the conversation) and `conversation` (learned-4 on: the rules
read with the conversation, plus `testbed.judges.local.conversation`'s measurements and the turn's similarity to the
user's earlier turns and the assistant's earlier messages). A model is always fed the set it was trained on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from testbed.judges.learned.embedding import StaticEmbedder
from testbed.judges.learned.projection import Projection
from testbed.conversation_context import assistant_texts, user_texts
from testbed.judges.local.conversation import ConversationFeatures, conversation_features, with_conversation
from testbed.judges.local.judge import analyse
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput

RULE_FEATURES = ("log_words", "q_frac", "a_frac", "tri_q", "tri_a", "rep3", "question", "request", "latin", "log_answer_numbers",
                 "injected", "empty", "a_only_frac", "novel_frac", "ask_cover", "dwell")
SIMILARITIES = ("cos_turn_question", "cos_turn_answer", "cos_question_answer", "cos_gap")
CONVERSATION_FEATURES = ("position", "has_context", "own_repeats", "own_overlap", "own_tri", "earlier_answer_tri", "answer_asks",
                         "tools", "cos_own_max", "cos_own_last", "cos_earlier_answer_max")
TURN, CONVERSATION = "turn", "conversation"
FEATURE_SETS = (TURN, CONVERSATION)
"""The feature sets a model can name in its meta; a model without the key was trained on `turn`."""


def feature_names(dim: int, features: str = TURN) -> list[str]:
    """Names of the columns `featurise` returns, in order (`dim`: the embedding's columns, or its projection's)."""
    labels = [f"rule_{label}" for label in taxonomy().labels]
    extra = list(CONVERSATION_FEATURES) if features == CONVERSATION else []
    return [*RULE_FEATURES, *labels, *SIMILARITIES, *(f"emb_{k}" for k in range(dim)), *extra]


def _rules(item: JudgeInput, conv: ConversationFeatures | None) -> tuple[list[float], str]:
    verdict, f, injected, o = analyse(item.question, item.assistant, item.user_turn)
    if conv is not None and item.context:
        verdict = with_conversation(verdict, conv)
    row = [math.log1p(f.n_words), f.q_frac, f.a_frac, f.tri_q, f.tri_a, f.rep3, float(f.question), float(f.request), f.latin,
           math.log1p(f.answer_numbers), float(injected), float(f.n_words == 0), o.a_only_frac, o.novel_frac, o.ask_cover, o.dwell]
    return row, verdict.label


def _conversation_columns(items: Sequence[JudgeInput], convs: Sequence[ConversationFeatures], turn: np.ndarray,
                          embedder: StaticEmbedder) -> np.ndarray:
    """The `CONVERSATION_FEATURES` columns: the rules' conversation measurements (`convs`, one per item) and the
    embedding similarities."""
    earlier = sorted({t for i in items for t in (*user_texts(i.context), *assistant_texts(i.context))})
    table = dict(zip(earlier, embedder.encode(earlier))) if earlier else {}
    out = np.zeros((len(items), len(CONVERSATION_FEATURES)), dtype=np.float32)
    for k, (item, c) in enumerate(zip(items, convs)):
        own = [table[t] @ turn[k] for t in user_texts(item.context)]
        said = [table[t] @ turn[k] for t in assistant_texts(item.context)]
        out[k] = [math.log(c.position), float(bool(item.context)), min(c.own_repeats, 3), c.own_overlap, c.own_tri, c.earlier_answer_tri,
                  float(c.answer_asks), float(c.tools), max(own, default=0.0), own[-1] if own else 0.0, max(said, default=0.0)]
    return out


def featurise(items: Sequence[JudgeInput], embedder: StaticEmbedder, features: str = TURN,
              projection: Projection | None = None) -> tuple[np.ndarray, list[str]]:
    """The feature matrix of the items (one row each, the columns of `feature_names(dim, features)`) and the rule
    classifier's label of each (read with the conversation under the `conversation` set). With a `projection`, the
    turn's embedding columns are its projection (`dim` = the projection's size); similarities always use the whole embedding."""
    if features not in FEATURE_SETS:
        raise ValueError(f"unknown feature set {features!r}; known: {', '.join(FEATURE_SETS)}")
    labels = list(taxonomy().labels)
    convs = [conversation_features(i.user_turn, i.assistant, i.context) for i in items] if features == CONVERSATION else None
    rules, rule_labels = zip(*(_rules(i, convs[k] if convs else None) for k, i in enumerate(items))) if items else ((), ())
    onehot = np.zeros((len(items), len(labels)), dtype=np.float32)
    for k, label in enumerate(rule_labels):
        onehot[k, labels.index(label)] = 1.0
    turn = embedder.encode([i.user_turn for i in items])
    contexts = sorted({i.question for i in items} | {i.assistant for i in items})
    table = dict(zip(contexts, embedder.encode(contexts)))
    question = np.stack([table[i.question] for i in items]) if items else np.zeros((0, embedder.dim), np.float32)
    answer = np.stack([table[i.assistant] for i in items]) if items else np.zeros((0, embedder.dim), np.float32)
    cos_q = (turn * question).sum(axis=1)
    cos_a = (turn * answer).sum(axis=1)
    cos_qa = (question * answer).sum(axis=1)
    sims = np.stack([cos_q, cos_a, cos_qa, cos_a - cos_q], axis=1) if items else np.zeros((0, 4), np.float32)
    shown = turn if projection is None else projection.apply(turn).reshape(len(items), projection.size)
    parts = [np.asarray(rules, dtype=np.float32).reshape(len(items), len(RULE_FEATURES)), onehot, sims, shown]
    if convs is not None:
        parts.append(_conversation_columns(items, convs, turn, embedder))
    return np.hstack(parts).astype(np.float32), list(rule_labels)
