"""The realism yardstick on synthetic conversations: an ideal simulator scores as human, a restating one does not.

The conversations are written here from templates and seeded word choices (no real people's
words): 300 contexts on 20 topics, requests of varied shape (how-to, explain, write, a pasted code
error), answers of 30 to 200 words, and real next turns drawn from follow-ups, thanks, new
requests, pasted code, "continue" and a few non-English lines. A real turn depends on its context
only through the topic, so a real turn taken from another context on the same topic is a draw from
the same conditional distribution: the ideal simulator.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from testbed.analysis.realism.table import REALISM_COLUMNS, human_baseline, realism_frame_columns, realism_table
from realism_vocabulary import ASPECTS, TOPICS
from testbed.analysis.realism.measures import plug_in_jsd_bias
from testbed.analysis.stats import wilson_interval

FILLER = ("the idea is simple once you see how each part depends on the previous one and why the order "
          "matters for the result you get at the end so it helps to start small and check each step "
          "carefully before moving on to the harder cases that usually appear later in practice").split()
CODE = ["def f(x):\n    return f(x - 1)", "SELECT * FROM users u JOIN orders o ON u.id = o.user_id;",
        "for (let i = 0; i < n; i++) {\n  total += a[i];\n}", "import numpy as np\nx = np.arange(10)"]


def _question(rng: np.random.Generator, topic: str) -> str:
    shapes = [f"How do I get started with {topic}?", f"Can you explain {topic} to me",
              f"write a short summary of {topic} for a beginner", f"what is the main idea behind {topic}",
              f"I keep getting an error with {topic}, why does this fail?\n```\n{rng.choice(CODE)}\n```",
              f"Give me three tips about {topic}."]
    return str(rng.choice(shapes))


def _answer(rng: np.random.Generator, topic: str) -> str:
    words = " ".join(rng.choice(FILLER, size=int(rng.integers(30, 200))))
    opening = rng.choice(["Sure!", "Great question.", "Here is an overview."])
    return f"{opening} {topic.capitalize()} is worth learning. {words}. Let me know if you want more detail."


def _real_turn(rng: np.random.Generator, topic: str) -> str:
    aspect = rng.choice(ASPECTS)
    other = rng.choice(TOPICS)
    kinds = [
        f"what about {aspect}?", f"ok but how does {topic} handle {aspect}?", f"Can you say more about {aspect}?",
        f"and if I care about {aspect} with {topic}, what changes?", "thanks", "thank you so much!", "ok",
        "great, thx", f"now write a short poem about {other}", f"Explain {other} the same way",
        f"it still fails:\n```\n{rng.choice(CODE)}\n```\nany idea?", "continue",
        "puedes explicarlo otra vez por favor", "请再详细解释一下这个", f"i dont get {aspect}, my teacher said otherwise",
        f"Why would {topic} matter for {aspect}? I thought it was the other way around.",
    ]
    weights = np.array([6, 5, 4, 3, 5, 3, 3, 2, 3, 2, 3, 2, 1, 1, 2, 3], dtype=float)
    return str(kinds[rng.choice(len(kinds), p=weights / weights.sum())])


def label_of(text: str) -> str:
    """A simple rule standing in for the judge: the label follows the turn's wording."""
    lower = text.lower()
    if lower.startswith(("thank", "ok", "great")):
        return "short_filler"
    if lower.startswith(("now write", "explain")):
        return "new_question"
    if lower == "continue":
        return "meta_planning"
    if "?" in text or lower.startswith("i dont"):
        return "genuine_followup"
    return "other"


def conversations(contexts: int = 300, seed: int = 7) -> pd.DataFrame:
    """The real rows: one context per row, with its topic (an extra column the measures must ignore)."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(contexts):
        topic = TOPICS[k % len(TOPICS)]
        text = _real_turn(rng, topic)
        rows.append({"context_id": f"ctx-{k:04d}", "topic": topic, "source": "real", "user_model": "human",
                     "user_mode": "human", "temperature": 0.0, "text": text, "answer": _answer(rng, topic),
                     "question": _question(rng, topic)})
    return pd.DataFrame(rows)


def judged(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with the rule's label and follow-up decision."""
    labels = frame["text"].map(label_of)
    return frame.assign(label=labels, followup=labels == "genuine_followup")


def simulate(real: pd.DataFrame, reply, model: str, per_context: int = 2, seed: int = 11) -> pd.DataFrame:
    """`per_context` simulated rows per context, their text from `reply(row, rng)`."""
    rng = np.random.default_rng(seed)
    rows = [{**row, "source": "simulated", "user_model": model, "user_mode": "plain", "temperature": 0.7,
             "text": reply(row, rng)} for row in real.to_dict("records") for _ in range(per_context)]
    return pd.DataFrame(rows)


def other_context_on_topic(real: pd.DataFrame):
    """The ideal simulator: a real turn from a random other context on the same topic."""
    by_topic = {t: g for t, g in real.groupby("topic")}

    def reply(row: dict, rng: np.random.Generator) -> str:
        pool = by_topic[row["topic"]]
        pool = pool[pool["context_id"] != row["context_id"]]
        return str(pool["text"].iloc[int(rng.integers(len(pool)))])

    return reply


def restates(row: dict, rng: np.random.Generator) -> str:
    """A simulator that repeats the request."""
    return str(row["question"])


@pytest.fixture(scope="module")
def real() -> pd.DataFrame:
    return conversations()


@pytest.fixture(scope="module")
def ideal_and_restating(real: pd.DataFrame) -> pd.DataFrame:
    frame = pd.concat([real, simulate(real, other_context_on_topic(real), "ideal"),
                       simulate(real, restates, "restater")], ignore_index=True)
    return judged(frame)


@pytest.fixture(scope="module")
def table(ideal_and_restating: pd.DataFrame) -> pd.DataFrame:
    return realism_table(ideal_and_restating, resamples=400).set_index("user_model")


def test_the_table_has_the_contract_columns_one_row_per_condition_in_sorted_order(table):
    assert list(table.reset_index().columns) == REALISM_COLUMNS
    assert list(table.index) == ["ideal", "restater"]
    assert table.loc["ideal", "contexts"] == 300 and table.loc["ideal", "simulated"] == 600
    assert table.loc["ideal", "real"] == 300


def test_an_ideal_simulator_is_indistinguishable(table):
    ideal = table.loc["ideal"]
    assert ideal["auc_lo"] <= 0.5 <= ideal["auc_hi"] and ideal["auc_p"] > 0.05
    assert 0.4 < ideal["auc"] < 0.6


def test_an_ideal_simulator_has_a_label_mix_within_the_plug_in_noise(table):
    # Two samples of one mix give a plug-in JSD near plug_in_jsd_bias (0.006 bits at 600 vs 300 over 5
    # labels); three times that is about four standard deviations of the chi-square noise above its mean.
    ideal = table.loc["ideal"]
    threshold = 3 * plug_in_jsd_bias(5, 600, 300)
    assert ideal["jsd"] < threshold
    assert ideal["jsd_lo"] <= ideal["jsd"] <= ideal["jsd_hi"]


def test_a_restating_simulator_is_trivially_told_apart_by_its_overlap_with_the_question(table):
    restater = table.loc["restater"]
    assert restater["auc"] > 0.95 and restater["auc_lo"] > 0.5
    assert restater["auc_p"] == pytest.approx(1 / 201), "no relabelling within contexts comes near it"
    assert "more overlap with the question" in restater["giveaways"]
    assert len(restater["giveaways"].split("), ")) == 3
    assert restater["jsd"] > table.loc["ideal", "jsd"]


def test_the_auc_does_not_depend_on_the_order_of_rows(ideal_and_restating, table):
    shuffled = ideal_and_restating.sample(frac=1.0, random_state=3).reset_index(drop=True)
    again = realism_table(shuffled, resamples=400).set_index("user_model")
    assert abs(again.loc["ideal", "auc"] - table.loc["ideal", "auc"]) < 1e-9
    assert abs(again.loc["restater", "auc"] - table.loc["restater", "auc"]) < 1e-9
    assert again.loc["ideal", "giveaways"] == table.loc["ideal", "giveaways"]


def test_the_auc_does_not_depend_on_the_seed_beyond_its_interval(ideal_and_restating):
    ideal_only = ideal_and_restating[ideal_and_restating["user_model"].isin(["human", "ideal"])]
    rows = [realism_table(ideal_only, seed=s, resamples=300).iloc[0] for s in range(5)]
    for row in rows:
        for other in rows:
            assert other["auc_lo"] <= row["auc"] <= other["auc_hi"]


def test_without_labels_the_label_measures_are_nan_and_the_auc_still_comes(ideal_and_restating):
    unlabelled = ideal_and_restating.assign(label=np.nan, followup=np.nan)
    row = realism_table(unlabelled, resamples=50).set_index("user_model").loc["restater"]
    assert np.isnan(row["jsd"]) and np.isnan(row["jsd_lo"]) and np.isnan(row["followup_sim"])
    assert np.isnan(row["followup_real"])
    assert row["auc"] > 0.95


def test_a_condition_with_fewer_contexts_than_folds_has_no_auc(real):
    few = simulate(real.head(3), restates, "few")
    row = realism_table(judged(pd.concat([real, few], ignore_index=True)), resamples=50).iloc[0]
    assert row["user_model"] == "few" and row["contexts"] == 3 and row["simulated"] == 6 and row["real"] == 3
    assert np.isnan(row["auc"]) and np.isnan(row["auc_lo"])
    assert row["length_ratio"] > 0


def test_contexts_with_only_simulated_rows_are_dropped(real):
    sims = simulate(real, restates, "restater")
    orphans = simulate(real.head(5).assign(context_id=lambda f: f["context_id"] + "-orphan"), restates, "restater")
    with_orphans = realism_table(judged(pd.concat([real, sims, orphans], ignore_index=True)), resamples=50).iloc[0]
    without = realism_table(judged(pd.concat([real, sims], ignore_index=True)), resamples=50).iloc[0]
    assert with_orphans["contexts"] == 300 and with_orphans["simulated"] == 600
    assert with_orphans["auc"] == without["auc"]


def test_a_condition_sharing_no_context_keeps_its_row_with_nan_measures(real):
    elsewhere = simulate(real.head(10).assign(context_id=lambda f: f["context_id"] + "-elsewhere"), restates, "lost")
    table = realism_table(judged(pd.concat([real, simulate(real, restates, "restater"), elsewhere],
                                           ignore_index=True)), resamples=20).set_index("user_model")
    assert list(table.index) == ["lost", "restater"]
    lost = table.loc["lost"]
    assert lost["contexts"] == 0 and lost["simulated"] == 0 and lost["real"] == 0
    assert np.isnan(lost["auc"]) and np.isnan(lost["jsd"]) and np.isnan(lost["length_ratio"])


def test_human_baseline_of_a_frame_without_real_turns_is_one_empty_row():
    row = human_baseline(pd.DataFrame(columns=list(realism_frame_columns))).iloc[0]
    assert row["turns"] == 0 and np.isnan(row["followup"]) and np.isnan(row["share_other"])


def test_an_empty_frame_gives_an_empty_table_with_the_columns():
    empty = pd.DataFrame(columns=list(realism_frame_columns))
    table = realism_table(empty)
    assert table.empty and list(table.columns) == REALISM_COLUMNS


def test_a_frame_missing_a_column_is_refused_naming_it(real):
    with pytest.raises(ValueError, match="question"):
        realism_table(real.drop(columns=["question"]))


class LetterEmbedder:
    """A scripted embedder: letter counts of each text, unnormalised, counting its calls."""

    def __init__(self) -> None:
        self.encoded: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.encoded.extend(texts)
        return np.array([[t.count(c) for c in "abcdefghijklmnopqrstuvwxyz"] for t in texts], dtype=float) + 1e-3


def test_cosine_and_length_ratio_on_a_small_known_frame():
    base = {"user_model": "m", "user_mode": "plain", "temperature": 0.5, "answer": "a", "question": "q",
            "label": np.nan, "followup": np.nan}
    rows = [{**base, "context_id": f"c{k}", "source": "real", "text": "abc abc"} for k in range(6)]
    rows += [{**base, "context_id": f"c{k}", "source": "simulated", "text": "abc abc abc abc" if k < 3 else "abc abc"}
             for k in range(6)]
    embedder = LetterEmbedder()
    row = realism_table(pd.DataFrame(rows), embedder=embedder, resamples=100).iloc[0]
    assert row["cosine"] == pytest.approx(1.0, abs=1e-6)
    assert sorted(embedder.encoded) == ["abc abc", "abc abc abc abc"]
    assert row["length_ratio"] == pytest.approx(1.5)
    assert 1.0 <= row["length_ratio_lo"] <= row["length_ratio_hi"] <= 2.0
    assert row["words_sim"] == 3.0 and row["words_real"] == 2.0
    assert np.isnan(realism_table(pd.DataFrame(rows), resamples=10).iloc[0]["cosine"])


def test_human_baseline_counts_each_context_once_and_gives_exact_shares():
    def real_row(context: str, text: str, label, followup) -> dict:
        return {"context_id": context, "source": "real", "user_model": "human", "user_mode": "human",
                "temperature": 0.0, "text": text, "answer": "an answer", "question": "a question",
                "label": label, "followup": followup}

    rows = [real_row("a", "what about loops?", "genuine_followup", True),
            real_row("a", "what about loops?", "genuine_followup", True),
            real_row("b", "thanks!", "short_filler", False),
            real_row("c", "now write a poem", "new_question", False),
            real_row("d", "and the second one?", "genuine_followup", True),
            real_row("e", "ok", np.nan, np.nan)]
    simulated = {**real_row("a", "thanks a lot", "short_filler", False), "source": "simulated", "user_model": "m"}
    row = human_baseline(pd.DataFrame([*rows, simulated])).iloc[0]
    assert row["turns"] == 5
    assert row["followup"] == pytest.approx(2 / 4)
    assert (row["followup_lo"], row["followup_hi"]) == pytest.approx(wilson_interval(2, 4))
    assert row["share_genuine_followup"] == pytest.approx(2 / 4)
    assert (row["share_genuine_followup_lo"], row["share_genuine_followup_hi"]) == pytest.approx(wilson_interval(2, 4))
    assert row["share_short_filler"] == pytest.approx(1 / 4) and row["share_new_question"] == pytest.approx(1 / 4)
    assert row["share_restate_question"] == 0.0 and row["share_other"] == 0.0
    assert row["thanks"] == pytest.approx(1 / 5) and row["question"] == pytest.approx(2 / 5)
    assert row["words"] == 3.0
