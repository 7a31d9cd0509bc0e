"""The learned judge's inputs: the rule classifier's measurements and verdict, and static embeddings.

Per turn: the local rules' features (overlap with the question and the answer, copied trigrams,
loops, question form, length, leaked judge-directed text) and their label as a one-hot; the
static MiniLM embedding of the turn; and its cosine similarity to the request and to the answer
(paraphrase-aware versions of the overlap features). Requests and answers repeat across a run's
turns, so their embeddings are computed once per text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from testbed.judges.learned.embedding import StaticEmbedder
from testbed.judges.local.judge import analyse
from testbed.judges.taxonomy import taxonomy
from testbed.judges.verdict import JudgeInput

RULE_FEATURES = ("log_words", "q_frac", "a_frac", "tri_q", "tri_a", "rep3", "question", "request", "latin", "log_answer_numbers",
                 "injected", "empty", "a_only_frac", "novel_frac", "ask_cover", "dwell")
SIMILARITIES = ("cos_turn_question", "cos_turn_answer", "cos_question_answer", "cos_gap")


def feature_names(dim: int) -> list[str]:
    """Names of the columns `featurise` returns, in order."""
    labels = [f"rule_{label}" for label in taxonomy().labels]
    return [*RULE_FEATURES, *labels, *SIMILARITIES, *(f"emb_{k}" for k in range(dim))]


def _rules(item: JudgeInput) -> tuple[list[float], str]:
    verdict, f, injected, o = analyse(item.question, item.assistant, item.user_turn)
    row = [math.log1p(f.n_words), f.q_frac, f.a_frac, f.tri_q, f.tri_a, f.rep3, float(f.question), float(f.request), f.latin,
           math.log1p(f.answer_numbers), float(injected), float(f.n_words == 0), o.a_only_frac, o.novel_frac, o.ask_cover, o.dwell]
    return row, verdict.label


def featurise(items: Sequence[JudgeInput], embedder: StaticEmbedder) -> tuple[np.ndarray, list[str]]:
    """The feature matrix of the items (one row each) and the rule classifier's label of each."""
    labels = list(taxonomy().labels)
    rules, rule_labels = zip(*(_rules(i) for i in items)) if items else ((), ())
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
    matrix = np.hstack([np.asarray(rules, dtype=np.float32).reshape(len(items), len(RULE_FEATURES)), onehot, sims, turn])
    return matrix.astype(np.float32), list(rule_labels)
