"""IFEval / IFBench prompt-level strict accuracy, offline, through `if-verifiable`.

A few checkers need NLTK data (`punkt_tab`, `averaged_perceptron_tagger_eng`,
`stopwords`) that no registry package ships. NLTK would try to download it, which on these
machines hangs or fails, and `if_verifiable.ifbench` even tries at import time. This module
therefore replaces NLTK's downloader with one that refuses, before anything here touches NLTK, and
reports every item that needs missing data as unscorable (`None`) instead of failed: a checker that
cannot run says nothing about the answer. NLTK is imported on first use (it takes seconds), so the
instruction datasets' entries can name their checker registries without paying for it.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

IFEVAL_CHECKERS = "if_verifiable.ifeval.instructions_registry"
"""The module whose `INSTRUCTION_DICT` maps IFEval's instruction ids to checker classes."""
IFBENCH_CHECKERS = "if_verifiable.ifbench.instructions_registry"
"""The module whose `INSTRUCTION_DICT` maps IFBench's instruction ids to checker classes."""
CHECKER_MODULES = (IFEVAL_CHECKERS, IFBENCH_CHECKERS)
"""Every checker registry an instruction dataset uses; an instruction id none of them knows is unscorable."""

# Found by reading the checkers of if-verifiable 0.1.2: every instruction whose
# `check_following` can reach NLTK data, and the resources it needs. Listing them up front keeps
# an item's scorability independent of the answer (e.g. `words:keywords_specific_position`
# only tokenizes when the answer has enough sentences).
_NLTK_RESOURCES: dict[str, tuple[str, ...]] = {
    "length_constraints:number_sentences": ("tokenizers/punkt_tab",),
    "change_case:capital_word_frequency": ("tokenizers/punkt_tab",),
    "ratio:stop_words": ("corpora/stopwords",),
    "words:start_verb": ("tokenizers/punkt_tab", "taggers/averaged_perceptron_tagger_eng"),
    "words:keywords_specific_position": ("tokenizers/punkt_tab",),
    "words:words_position": ("tokenizers/punkt_tab",),
    "format:title_case": ("tokenizers/punkt_tab",),
}


class NltkDownloadRefused(LookupError):
    """Raised instead of an NLTK download, so no check ever waits on the network.

    A `LookupError` because that is what NLTK raises for missing data, so one `except` covers
    both.
    """


def _refuse_download(*args: Any, **kwargs: Any) -> bool:
    raise NltkDownloadRefused(f"NLTK downloads are disabled offline (asked for {args!r})")


def _skip_download(*args: Any, **kwargs: Any) -> bool:
    return False


def _install_downloader(download: Any) -> None:
    """Point every public route to `Downloader.download` at `download`."""
    import nltk
    import nltk.downloader

    nltk.download = download
    nltk.downloader.download = download
    nltk.downloader.Downloader.download = download


@functools.lru_cache(maxsize=None)
def offline_nltk() -> Any:
    """NLTK, imported once with its downloader refusing: every use of NLTK here goes through this."""
    import nltk

    _install_downloader(_refuse_download)
    return nltk


def registry(checkers: str) -> dict[str, Any]:
    """The instruction registry (id -> checker class) in module `checkers`, one of `CHECKER_MODULES`.

    Raises:
        KeyError: `checkers` is not a checker registry an instruction dataset uses.
    """
    if checkers not in CHECKER_MODULES:
        raise KeyError(checkers)
    return _load_registry(checkers)


@functools.lru_cache(maxsize=None)
def _load_registry(module_name: str) -> dict[str, Any]:
    """Import a registry with downloads answered "not available" rather than refused, because
    `if_verifiable.ifbench` calls `nltk.download` at import time and would otherwise fail to
    import at all; afterwards any download attempt raises again."""
    import langdetect

    langdetect.DetectorFactory.seed = 0
    offline_nltk()
    _install_downloader(_skip_download)
    try:
        module = importlib.import_module(module_name)
    finally:
        _install_downloader(_refuse_download)
    return dict(module.INSTRUCTION_DICT)


@functools.lru_cache(maxsize=None)
def _nltk_resource_present(resource: str) -> bool:
    try:
        offline_nltk().data.find(resource)
    except LookupError:
        return False
    return True


def scorable_instruction(instruction_id: str) -> bool:
    """Whether an IFEval or IFBench instruction can be checked on this machine.

    Args:
        instruction_id: An id such as `"punctuation:no_comma"` (the two registries share none).

    Returns:
        False for an id neither registry knows, or one whose checker needs NLTK data that is not
        installed; True otherwise. Installing the data makes such instructions scorable again.
    """
    if not any(instruction_id in registry(checkers) for checkers in CHECKER_MODULES):
        return False
    return all(_nltk_resource_present(r) for r in _NLTK_RESOURCES.get(instruction_id, ()))


def check_instructions(
    checkers: str,
    response: str,
    instruction_id_list: list[str],
    kwargs: list[dict[str, Any]],
    prompt: str,
) -> float | None:
    """Prompt-level strict accuracy of one response: 1.0 only if every instruction is followed.

    Args:
        checkers: The dataset's checker registry module, one of `CHECKER_MODULES`.
        response: The assistant's answer.
        instruction_id_list: The item's instruction ids.
        kwargs: One argument dict per instruction (`None` values are ignored).
        prompt: The original prompt; some checkers compare the response with it.

    Returns:
        1.0 or 0.0, or `None` when some instruction is unknown or cannot be checked offline.
    """
    known = registry(checkers)
    from if_verifiable.api import evaluate_instructions

    if not all(i in known and scorable_instruction(i) for i in instruction_id_list):
        return None
    clean = [{k: v for k, v in (d or {}).items() if v is not None} for d in kwargs]
    try:
        _, scores = evaluate_instructions(response, instruction_id_list, clean, prompt, known)
    except LookupError:
        return None
    return scores.binary_strict
