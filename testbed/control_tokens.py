"""Neutralise chat-template control tokens in text that goes into another model's prompt.

A server applies its chat template to the request messages and then tokenises the result, so a
message content holding `<|im_end|>` becomes the real end-of-turn token: a user turn closes early
and whatever follows it (a forged assistant verdict, a forged system prompt) is read as a turn of
its own. String-level fencing cannot stop that; breaking the token in the text can. Each token is
broken visibly by a space after its first character (`<|im_end|>` -> `< |im_end|>`, `[INST]` ->
`[ INST]`), so a reader still sees what the text said and no model receives the token.

Only the request messages are changed; transcripts and the store keep the text as generated.

The set neutralised is the generic one (the turn and role markers of the common template
families) plus, where the receiving model's tokenizer is on disk, every token it marks special.
`<think>`/`</think>` are not in the generic set: they mark no turn or role boundary, templates only
strip them from earlier assistant turns, and a model that makes them special tokens has them
neutralised through its tokenizer.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from testbed.backends.catalogue import catalogue_model
from testbed.backends.model_prep import is_prepared, model_dir
from testbed.specs.agent import AgentSpec

GENERIC_PATTERNS = (
    r"<\|[^|<>\s]{1,64}\|>",
    r"<｜[^｜<>\s]{1,64}｜>",
)
GENERIC_LITERALS = (
    "<start_of_turn>", "<end_of_turn>", "<bos>", "<eos>",
    "<s>", "</s>", "[INST]", "[/INST]", "<<SYS>>", "<</SYS>>",
    "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
    "[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]",
)
SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
LIST_KEYS = ("additional_special_tokens", "extra_special_tokens")
_GENERIC = re.compile("|".join(GENERIC_PATTERNS))


def _breakable(token: str) -> str | None:
    """The part of a token to break: its longest run without whitespace, if at least two characters.

    Breaking that run breaks the token. Runs are whitespace-free, so the inserted space can never
    complete another one; a one-character token cannot be broken visibly and is left alone.
    """
    runs = token.split()
    run = max(runs, key=len) if runs else ""
    return run if len(run) >= 2 else None


def _break(match: re.Match[str]) -> str:
    text = match.group(0)
    return f"{text[0]} {text[1:]}"


class ControlTokens:
    """The control tokens one receiving model must not get from message contents, and how to break them.

    Build one per receiving agent (`for_agent`); a backend may be shared by agents of different
    models, so the set belongs to the agent, not to the backend.
    """

    def __init__(self, extra: tuple[str, ...] | frozenset[str] = ()):
        literals = {run for t in (*GENERIC_LITERALS, *extra) if (run := _breakable(t)) and not _GENERIC.fullmatch(run)}
        self.literals = frozenset(literals)
        ordered = sorted(literals, key=lambda t: (-len(t), t))
        self._pattern = re.compile("|".join([*GENERIC_PATTERNS, *map(re.escape, ordered)]))
        self._firsts = tuple({"<", *(t[0] for t in literals)})

    def neutralise(self, text: str) -> str:
        """The text with every control token broken by a space; the same object when it holds none.

        It runs on every request, so text without any token's first character returns at once.
        Passes repeat until nothing matches: overlapping tokens can survive one pass, and a pass
        never creates a token (no token holds whitespace), so this ends.
        """
        if not any(c in text for c in self._firsts):
            return text
        count = 1
        while count:
            text, count = self._pattern.subn(_break, text)
        return text

    def contains(self, text: str) -> bool:
        """True when the text still holds a control token (for tests and audits)."""
        return self._pattern.search(text) is not None

    @classmethod
    def for_agent(cls, spec: AgentSpec) -> "ControlTokens":
        """The set for the model an agent names: generic, plus its tokenizer's special tokens when on disk."""
        entry = catalogue_model(spec.model)
        key = str(model_dir(entry)) if entry is not None else spec.model
        cached = _BY_MODEL.get(key)
        if cached is not None:
            return cached
        folder = model_folder(spec.model)
        tokens = for_folder(str(folder) if folder is not None else None)
        if folder is not None:
            _BY_MODEL[key] = tokens
        return tokens


GENERIC = ControlTokens()
_BY_MODEL: dict[str, ControlTokens] = {}
"""Sets found on disk, by model name (the embedded model: by its folder); a model not (yet) on disk is
looked up again next time."""


@functools.lru_cache(maxsize=64)
def for_folder(folder: str | None) -> ControlTokens:
    """The set for a model folder (None: generic only), built once per folder."""
    return ControlTokens(tokenizer_special_tokens(folder)) if folder is not None else GENERIC


def model_folder(model: str) -> Path | None:
    """The folder holding the agent's tokenizer, if it is already on disk; never downloads or converts.

    A catalogue model (the embedded one too) counts once prepared; otherwise a local directory, or a
    hub id already in the local Hugging Face cache (a server started elsewhere serving it under that id).
    """
    entry = catalogue_model(model)
    if entry is not None:
        folder = model_dir(entry)
        return folder if is_prepared(folder) else None
    path = Path(model).expanduser()
    if path.is_dir():
        return path
    try:
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(model, "tokenizer_config.json")
    except Exception:  # not a valid repo id, or no hub library: nothing on disk to read
        return None
    return Path(cached).parent if isinstance(cached, str) else None


def _content(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [value["content"]] if isinstance(value.get("content"), str) else [s for v in value.values() for s in _content(v)]
    if isinstance(value, list):
        return [s for v in value for s in _content(v)]
    return []


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@functools.lru_cache(maxsize=64)
def tokenizer_special_tokens(folder: str) -> frozenset[str]:
    """Every token a model folder's tokenizer files mark special, read as plain JSON.

    No transformers import: this runs inside every run, on machines that may lack it. Missing or
    unreadable files contribute nothing; the generic set still applies.
    """
    root = Path(folder)
    found: set[str] = set()
    found.update(t["content"] for t in _read_json(root / "tokenizer.json").get("added_tokens") or []
                 if isinstance(t, dict) and t.get("special") and isinstance(t.get("content"), str))
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        config = _read_json(root / name)
        decoder = config.get("added_tokens_decoder") or {}
        if isinstance(decoder, dict):
            found.update(s for t in decoder.values() if isinstance(t, dict) and t.get("special") for s in _content(t))
        for key in (*SPECIAL_KEYS, *LIST_KEYS):
            found.update(_content(config.get(key)))
    return frozenset(t for t in found if t)
