"""The registration of every extension point: each name with the import path of its typed entry.

This module sits at the top of the package (`testbed/__init__.py` imports it first), so it may
name any module; the registries it fills (testbed.specs.registries, and testbed.datasets.catalog for
the datasets) name none. Registering imports nothing: an entry's module is imported when the entry
is first read. Adding a scenario kind (with its report and views), backend, judge kind, framework, report, dataset or figure is
its entry in its own module plus one line here; nothing else registers (tests/house/test_registrations.py).
The figures are built, written and listed by `testbed plot` in the order they are registered here; the
baseline framework is registered first, so the default framework is read by name (`default_framework`).
"""

from __future__ import annotations

from testbed.datasets.catalog import DATASETS
from testbed.specs.registries import BACKENDS, FIGURES, FRAMEWORKS, JUDGE_KINDS, KINDS, REPORTS, VIEWS

KINDS.register("probe", "testbed.scenarios.probe:KIND")
KINDS.register("dialogue", "testbed.scenarios.dialogue:KIND")
KINDS.register("info_gathering", "testbed.scenarios.info_gathering:KIND")
KINDS.register("tau2", "testbed.scenarios.tau2.kind:KIND")

BACKENDS.register("vllm", "testbed.backends.factory:VLLM")
BACKENDS.register("openai", "testbed.backends.factory:OPENAI")
BACKENDS.register("litellm", "testbed.backends.factory:LITELLM")
BACKENDS.register("scripted", "testbed.backends.factory:SCRIPTED")
BACKENDS.register("python", "testbed.backends.python_agent:PYTHON")
BACKENDS.register("http-agent", "testbed.backends.http_agent:HTTP_AGENT")
BACKENDS.register("tau2-scripted", "testbed.scenarios.tau2.scripted_user_server:SCRIPTED_USER")

JUDGE_KINDS.register("local", "testbed.judges.local.judge:JUDGE_KIND")
JUDGE_KINDS.register("llm", "testbed.judges.llm_judge:JUDGE_KIND")
JUDGE_KINDS.register("learned", "testbed.judges.learned.routed:JUDGE_KIND")

FRAMEWORKS.register("native", "testbed.frameworks.catalogue:NATIVE")
FRAMEWORKS.register("autogen", "testbed.frameworks.catalogue:AUTOGEN")
FRAMEWORKS.register("langgraph", "testbed.frameworks.catalogue:LANGGRAPH")
FRAMEWORKS.register("camel", "testbed.frameworks.catalogue:CAMEL")
FRAMEWORKS.register("tau2", "testbed.scenarios.tau2.kind:FRAMEWORK")

REPORTS.register("probe", "testbed.analysis.reports.probe:PROBE_REPORT")
REPORTS.register("conversation", "testbed.analysis.reports.conversation:CONVERSATION_REPORT")
REPORTS.register("info_gathering", "testbed.analysis.reports.conversation:INFO_GATHERING_REPORT")
REPORTS.register("tau2", "testbed.analysis.tau2.report:TAU2_REPORT")

VIEWS.register("tau2", "testbed.analysis.tau2.views:VIEWS")

DATASETS.register("gsm8k", "testbed.datasets.gsm8k:GSM8K")
DATASETS.register("ifeval", "testbed.datasets.instructions:IFEVAL")
DATASETS.register("ifbench", "testbed.datasets.instructions:IFBENCH")
DATASETS.register("gpqa_diamond", "testbed.datasets.gpqa:GPQA_DIAMOND")
DATASETS.register("healthbench", "testbed.datasets.healthbench:HEALTHBENCH")
DATASETS.register("sharegpt", "testbed.datasets.sharegpt:SHAREGPT")

FIGURES.register("accuracy_vs_followup", "testbed.analysis.figures.data:ACCURACY_VS_FOLLOWUP")
FIGURES.register("followup_vs_temperature", "testbed.analysis.figures.data:FOLLOWUP_VS_TEMPERATURE")
FIGURES.register("perturbation_effects", "testbed.analysis.figures.data:PERTURBATION_EFFECTS")
FIGURES.register("failure_modes", "testbed.analysis.figures.data:FAILURE_MODES")
FIGURES.register("survival", "testbed.analysis.figures.data:SURVIVAL")
FIGURES.register("tau2-users", "testbed.analysis.tau2.figures:TAU2_USERS")
FIGURES.register("realism", "testbed.analysis.figures.realism_data:REALISM")
FIGURES.register("realism-labels", "testbed.analysis.figures.realism_data:REALISM_LABELS")
