"""The big store `benchmarks/replay.py` measures the replay app on: one dialogue run, made-up texts, two judges.

Written through the store's API (episodes one transaction each, labels in batches) and cached at a
path while its counts match, so repeated benchmark runs reuse it.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from rich.console import Console

from testbed.judges.taxonomy import taxonomy
from testbed.store import EpisodeKey, EpisodeOutcome, LabelRow, Store
from testbed.store.browse import episodes_containing, message_counts
from testbed.store.labels import JudgeIdentity, identities, write_labels
from testbed.transcript import Message, Transcript, Usage

MESSAGES_PER_EPISODE = 10
ERROR_SHARE = 0.02
DRIFT_SHARE = 0.2
RARE_SHARE = 0.01
RARE_WORD = "zeppelin"
ASSISTANT_MODELS = ("model-a-7b", "model-b-14b")
USER_MODEL = "user-model-3b"
USER_MODES = ("raw", "instructed")
TEMPERATURES = (0.0, 0.7, 1.0)
JUDGES = (JudgeIdentity("local", "bench"), JudgeIdentity("failure-modes", "v2", "judge-model"))
LABEL_BATCH = 4000
NOUNS = ("sheep", "apples", "tickets", "books", "marbles", "bottles", "coins", "chairs", "boxes", "pencils", "eggs", "stamps")
NAMES = ("Ana", "Ben", "Chloe", "Dev", "Elif", "Farid", "Grace", "Hugo", "Iris", "Jonas", "Kemal", "Lena")
OPENINGS = (
    "{name} has {a} {noun} and buys {b} more every week.",
    "A shop sells {a} {noun} on Monday and {b} on each of the next {c} days.",
    "How many {noun} does {name} have after {c} weeks if none are given away?",
    "Each box holds {b} {noun}, and there are {a} boxes in the storeroom.",
    "{name} gives away a third of the {noun} and keeps the rest for the school fair.",
    "What is the total, and how much is left once {c} of them are sold?",
    "Please show the working so that I can follow every step of the calculation.",
)
ANSWERS = (
    "First, add {a} and {b} to get {s}.",
    "Then multiply by {c}, which gives {p} {noun} in total.",
    "So {name} ends up with {p} {noun}.",
    "Let me check the arithmetic once more: {a} plus {b} is {s}, and {s} times {c} is {p}.",
    "The key step is to count the weekly purchases separately from the starting amount.",
    "If a third are given away, we divide {p} by three and subtract that from the total.",
    "Therefore the answer is {p}, assuming nothing else changes during those weeks.",
    "A quick way to see this is to write the whole calculation as one expression.",
)
USER_TURNS = (
    "Why did you multiply by {c} there instead of adding again?",
    "Can you check step {k} again? I got {q} when I did it.",
    "Thanks, that makes sense now.",
    "Could you explain it without the formula, just in words?",
    "What happens if {name} buys {b} fewer {noun} each week?",
    "I think the starting amount was {a}, not {b}; does that change the answer?",
    "Is there a faster way to do this in my head?",
    "Wait, where does the {s} come from?",
    "OK, and how would the answer look after {c} more weeks?",
)
ERROR_REASON = "HTTP 503 from the user model: Service Unavailable (upstream overloaded, retry later)"


def run_id_for(episodes: int) -> str:
    """The benchmark run's id (it names the size, and is not part of the default store's path)."""
    return f"bench-replay-{episodes}"


def plan(episodes: int) -> tuple[set[int], set[int]]:
    """Which episodes error (stopping after 8 messages) and which finished ones get 12 messages, so the total is exact."""
    errored = set(range(25, episodes, round(1 / ERROR_SHARE)))
    longer = set(range(40, episodes, round(1 / ERROR_SHARE))) - errored
    return errored, set(sorted(longer)[: len(errored)])


def words_text(rng: random.Random, bank: tuple[str, ...], values: dict) -> str:
    """Sentences drawn from a bank, cut to 20–80 words."""
    target = rng.randint(20, 80)
    words: list[str] = []
    while len(words) < target:
        words.extend(rng.choice(bank).format(**values).split())
    return " ".join(words[:target])


def episode_values(rng: random.Random) -> dict:
    """The numbers and names one episode's texts talk about."""
    a, b, c = rng.randint(3, 60), rng.randint(2, 25), rng.randint(2, 9)
    return {"a": a, "b": b, "c": c, "s": a + b, "p": (a + b) * c, "q": (a + b) * c + rng.randint(1, 9), "k": rng.randint(1, 4),
            "noun": rng.choice(NOUNS), "name": rng.choice(NAMES)}


def episode_messages(rng: random.Random, count: int, model: str) -> list[Message]:
    """An opening user message, then assistant and generated user turns alternating, `count` in all."""
    values = episode_values(rng)
    out = [Message("user", words_text(rng, OPENINGS, values), "dataset", 0)]
    for turn in range(1, count):
        role = "assistant" if turn % 2 else "user"
        text = words_text(rng, ANSWERS if role == "assistant" else USER_TURNS, values)
        usage = Usage(rng.randint(80, 900), len(text.split()) * 4 // 3, round(rng.uniform(0.2, 3.5), 3))
        out.append(Message(role, text, model if role == "assistant" else "simuser", turn, usage=usage))
    if rng.random() < RARE_SHARE:
        k = rng.randrange(1, count)
        m = out[k]
        out[k] = Message(m.role, m.content.replace(" ", f" {RARE_WORD} ", 1), m.speaker, m.turn_index, usage=m.usage)
    return out


def episode_outcome(index: int, errored: bool, longer: bool, seed: int) -> EpisodeOutcome:
    """Episode `index` of the run: its conditions cycle through models, user modes and temperatures."""
    rng = random.Random(f"{seed}:{index}")
    model = ASSISTANT_MODELS[index % 2]
    key = EpisodeKey(f"ep{index:05d}-{rng.getrandbits(32):08x}", f"gsm8k-{index // 12:04d}", "gsm8k", "helper", model,
                     "simuser", USER_MODEL, USER_MODES[(index // 2) % 2], TEMPERATURES[(index // 4) % 3], 0, "none")
    count = 8 if errored else 12 if longer else MESSAGES_PER_EPISODE
    messages = episode_messages(rng, count, model)
    usage = Transcript(messages).usage()
    if errored:
        return EpisodeOutcome(key, messages, "error", "error", ERROR_REASON, usage=usage)
    return EpisodeOutcome(key, messages, "done", "max_turns", usage=usage)


def judge_labels(rng: random.Random) -> tuple[str, str]:
    """The two judges' labels on one turn: about 20 % drift labels, the second judge agreeing most of the time."""
    t = taxonomy()
    drift, other = sorted(t.drift_labels), [x for x in t.labels if x not in t.drift_labels]
    weights = [6 if x == t.followup_label else 1 for x in other]

    def draw() -> str:
        return rng.choice(drift) if rng.random() < DRIFT_SHARE else rng.choices(other, weights)[0]

    first = draw()
    return first, first if rng.random() < 0.75 else draw()


def label_rows(outcome: EpisodeOutcome, rng: random.Random) -> list[tuple[LabelRow, LabelRow]]:
    """Both judges' rows on every generated user turn of a finished episode."""
    t = taxonomy()
    out = []
    for m in outcome.messages[2::2]:
        first, second = judge_labels(rng)
        out.append(tuple(LabelRow(outcome.key.episode_id, m.turn_index, "scored", label, t.is_followup(label),
                                  f"{who.judge}: {label}") for who, label in zip(JUDGES, (first, second))))
    return out


def expected_counts(episodes: int) -> tuple[int, int, int]:
    """(finished, errored, messages) the store must hold."""
    errored, _ = plan(episodes)
    return episodes - len(errored), len(errored), episodes * MESSAGES_PER_EPISODE


def store_matches(path: Path, episodes: int) -> bool:
    """Whether the store at `path` already holds the benchmark run with the right counts and both judges."""
    if not path.is_file():
        return False
    run_id = run_id_for(episodes)
    done, errors, messages = expected_counts(episodes)
    store = Store(path, readonly=True)
    try:
        if store.find_run(run_id) is None or store.episode_counts(run_id) != {"done": done, "error": errors}:
            return False
        return sum(message_counts(store, run_id).values()) == messages and set(identities(store, run_id)) == set(JUDGES)
    finally:
        store.close()


def remove_store(path: Path) -> None:
    """Delete a store file and its WAL files."""
    for p in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        p.unlink(missing_ok=True)


def build_store(path: Path, episodes: int, seed: int, console: Console) -> None:
    """Write the run episode by episode (one transaction each) and the labels in batches."""
    remove_store(path)
    run_id = run_id_for(episodes)
    errored, longer = plan(episodes)
    store = Store(path)
    store.begin_run(run_id, scenario="replay-bench", kind="dialogue", spec={}, fingerprint="bench", versions={},
                    git_revision=None, planned=episodes)
    rng = random.Random(seed)
    pending: list[tuple[LabelRow, LabelRow]] = []
    for i in range(episodes):
        outcome = episode_outcome(i, i in errored, i in longer, seed)
        store.write_episode(run_id, outcome)
        if outcome.status == "done":
            pending.extend(label_rows(outcome, rng))
        if len(pending) >= LABEL_BATCH or (i == episodes - 1 and pending):
            for k, who in enumerate(JUDGES):
                write_labels(store, run_id, who, [pair[k] for pair in pending])
            pending = []
        if (i + 1) % 2000 == 0:
            console.print(f"  {i + 1} episodes written", highlight=False)
    store.finish_run(run_id, "incomplete" if errored else "done")
    store.close()


def ensure_store(path: Path, episodes: int, seed: int, rebuild: bool, console: Console) -> dict:
    """Reuse the cached store when it matches, else build it; what was done and how long it took."""
    if not rebuild and store_matches(path, episodes):
        console.print(f"reusing {path}", highlight=False)
        return {"reused": True, "build_s": None}
    console.print(f"building {path}: {episodes} episodes ...", highlight=False)
    started = time.perf_counter()
    build_store(path, episodes, seed, console)
    build_s = time.perf_counter() - started
    console.print(f"built in {build_s:.1f} s", highlight=False)
    return {"reused": False, "build_s": round(build_s, 2)}


def store_facts(path: Path, episodes: int) -> dict:
    """What the store holds: episodes, messages, label identities, episodes containing the rare word, file size."""
    run_id = run_id_for(episodes)
    store = Store(path, readonly=True)
    try:
        counts = store.episode_counts(run_id)
        return {"run_id": run_id, "episodes": sum(counts.values()), "errored": counts["error"],
                "messages": sum(message_counts(store, run_id).values()), "judges": [str(i) for i in identities(store, run_id)],
                "rare_word": RARE_WORD, "rare_word_episodes": len(episodes_containing(store, run_id, RARE_WORD)),
                "size_mb": round(path.stat().st_size / 2**20, 1)}
    finally:
        store.close()
