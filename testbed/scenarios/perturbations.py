"""Changes to the assistant answer as shown to the simulated user: do they read it at all?

The perturbations and their parameters are specs (testbed.specs.perturbation); this module keeps
the by-name entry point.
"""

from __future__ import annotations

from testbed.specs.perturbation import EXPLICIT_QUESTION, PerturbationSpec

__all__ = ["EXPLICIT_QUESTION", "perturb"]


def perturb(answer: str, perturbation: str | PerturbationSpec) -> str:
    """The answer as the simulated user sees it under a perturbation (a name with default parameters, or a spec)."""
    if isinstance(perturbation, str):
        if perturbation not in ("none", "truncation", "explicit_question"):
            raise ValueError(f"unknown perturbation {perturbation!r}")
        perturbation = PerturbationSpec(kind=perturbation)
    return perturbation.apply(answer)
