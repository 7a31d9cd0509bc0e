"""Every scenario kind, backend and judge kind by name: where its code lives and what it declares.

These are the only places that know the names. The spec layer validates against them and reads
the declared facts (which field `--limit` sets, which fields a backend needs, whether it is
managed) without importing any implementation: code is named by `Ref` strings, imported when a
run, a report or a judge first uses it. A new kind, backend or judge is one `register` call.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator
from pydantic_core import PydanticCustomError

from testbed.registry import Ref, Registry

KINDS = Registry("scenario kind")
"""Scenario kinds. Target: the kind class (plan + runner). Metadata:

`spec` the spec model; `limit_field` the selection `--limit` sets; `resolve` a hook
`(path, spec, user_prompt) -> {field: value}` that reads the kind's extra files into
ResolvedScenario (or None); `report` `(store, run_id, kind, judge) -> DataFrame`;
`report_tables` printers `(store, run_id, judge)` the table report adds after the main table.
"""

KINDS.register(
    "probe", "testbed.scenarios.probe:ProbeKind",
    spec=Ref("testbed.specs.scenario:ProbeScenarioSpec"), limit_field="items",
    resolve=Ref("testbed.specs.loader:check_conversation_slot"),
    report=Ref("testbed.analysis.report:probe_report"),
    report_tables=(Ref("testbed.cli.app:print_perturbation_effects"),),
)
KINDS.register(
    "dialogue", "testbed.scenarios.dialogue:DialogueKind",
    spec=Ref("testbed.specs.conversation:DialogueScenarioSpec"), limit_field="items",
    resolve=Ref("testbed.specs.loader:read_personas"),
    report=Ref("testbed.analysis.conversation_report:conversation_report"),
    report_tables=(),
)
KINDS.register(
    "info_gathering", "testbed.scenarios.info_gathering:InfoGatheringKind",
    spec=Ref("testbed.specs.conversation:InfoGatheringScenarioSpec"), limit_field="tasks",
    resolve=Ref("testbed.scenarios.info_tasks:resolve_task_set"),
    report=Ref("testbed.analysis.conversation_report:conversation_report"),
    report_tables=(),
)

BACKENDS = Registry("backend")
"""Backends. Target: an async builder `(AgentSpec, BackendPool) -> Backend`. Metadata:

`capabilities` what the backend can do unless the spec declares otherwise; `declarable` the
capabilities an agent spec's `capabilities:` block may set (the rest are fixed); `requires`
field → the fix shown when the spec lacks it; `managed` True when, without `base_url`, the
testbed starts the server itself; `replicas` True when requests can be spread over several servers of
one model (`base_urls`, `server.replicas`).
"""

BACKENDS.register(
    "vllm", "testbed.backends.factory:build_openai_compatible",
    capabilities={"continue_user_turn": True, "structured_output": True}, declarable=(), requires={}, managed=True,
    replicas=True,
)
BACKENDS.register(
    "openai", "testbed.backends.factory:build_openai_compatible",
    capabilities={"continue_user_turn": False, "structured_output": False},
    declarable=("continue_user_turn", "structured_output"),
    requires={"base_url": "add base_url: http://HOST:PORT/v1"}, managed=False, replicas=True,
)
BACKENDS.register(
    "litellm", "testbed.backends.factory:build_litellm",
    capabilities={"continue_user_turn": False, "structured_output": True}, declarable=("structured_output",),
    requires={}, managed=False,
)
BACKENDS.register(
    "scripted", "testbed.backends.factory:build_scripted",
    capabilities={"continue_user_turn": True, "structured_output": True}, declarable=(),
    requires={"outputs": "add outputs: [..] (tests only)"}, managed=False,
)

JUDGE_KINDS = Registry("judge kind")
"""Judge kinds. Target: a builder `(ResolvedJudge, backend=None) -> Judge` (testbed.judges.base).

Metadata: `prompted` True when the judge reads a prompt file and binds an agent (so those
fields, `requires`, must be in its spec); `article` the word before the kind in messages.
"""

JUDGE_KINDS.register("local", "testbed.judges.local.judge:build", prompted=False, requires=(), article="a")
JUDGE_KINDS.register("llm", "testbed.judges.llm_judge:build", prompted=True,
                     requires=("prompt_file", "prompt_version", "agent"), article="an")
JUDGE_KINDS.register("learned", "testbed.judges.learned.judge:build", prompted=False, requires=("model_file",), article="a")


def registered(registry: Registry) -> Any:
    """A `str` field type that accepts exactly the registry's names at validation time.

    Like a `Literal` of the names (same error type and message, so spec errors read as before),
    but checked against the registry when a spec is validated, so an entry registered later
    (a plug-in, a test's fake) is accepted without redefining the spec model.
    """

    def check(value: object) -> object:
        if value not in registry:
            raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": registry.one_of()})
        return value

    return Annotated[str, BeforeValidator(check)]


FRAMEWORKS = Registry("framework")
"""Frameworks: who runs the turn loop (testbed.frameworks). Target: the framework class."""

FRAMEWORKS.register("native", "testbed.frameworks.native:NativeFramework", kinds=None, user_modes=None, modules=(), backends=None)
"""`kinds`, `user_modes`, `backends`: what a framework can run (None: anything); `modules`: what must be
importable for it, from the optional `extra`."""
_AGENT_FRAMEWORK = dict(kinds=("dialogue",), user_modes=("instructed",), extra="frameworks", backends=("vllm", "openai"))
"""What the agent frameworks can run: dialogues, with an instructed user, against OpenAI-compatible servers.
Raw user mode needs the chat template's user turn continued, which no framework's model client can
ask for; information gathering releases a persona's hidden facts turn by turn, which a framework
agent's fixed system message cannot do; the probe has no turn loop to hand over."""
FRAMEWORKS.register("autogen", "testbed.frameworks.autogen_chat:AutoGenFramework", modules=("autogen_agentchat", "autogen_ext.models.openai"),
                    **_AGENT_FRAMEWORK)
FRAMEWORKS.register("langgraph", "testbed.frameworks.langgraph_graph:LangGraphFramework", modules=("langgraph", "langchain_openai"),
                    **_AGENT_FRAMEWORK)
FRAMEWORKS.register("camel", "testbed.frameworks.camel_roleplay:CamelFramework", modules=("camel",), **_AGENT_FRAMEWORK)
