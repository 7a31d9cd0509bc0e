"""Every framework's entry (testbed.specs.registries.FrameworkEntry): what it can run and what it needs.

The entries live here, not in each framework's module, because an agent framework's module
imports its optional package at the top: reading what a framework can run (to choose the user
modes `compare` runs, or to say which extra to install) must not need that package.
"""

from __future__ import annotations

from testbed.specs.registries import FrameworkEntry

NATIVE = FrameworkEntry("native", "testbed.frameworks.native:NativeFramework", owns_client=False, baseline=True)
"""The testbed's own turn loop: any kind, user mode and backend; the baseline `compare` pairs the others with."""

OPENAI_COMPATIBLE = ("vllm", "openai", "tau2-scripted")
"""The backends whose servers a framework's own model client can talk to (the scripted τ² user serves its script on
such an endpoint: testbed.scenarios.tau2.scripted_user_server)."""

_AGENT_FRAMEWORK = dict(kinds=("dialogue", "tau2"), user_modes=("instructed",), extra="frameworks", backends=OPENAI_COMPATIBLE)
"""What the agent frameworks can run: dialogues and τ² tasks (the assistant with the domain's tools), with an
instructed user, against OpenAI-compatible servers.
Raw user mode needs the chat template's user turn continued, which no framework's model client can
ask for; information gathering releases a persona's hidden facts turn by turn, which a framework
agent's fixed system message cannot do; the probe has no turn loop to hand over."""

AUTOGEN = FrameworkEntry("autogen", "testbed.frameworks.autogen_tools:AutoGenFramework",
                         modules=("autogen_agentchat", "autogen_ext.models.openai"), **_AGENT_FRAMEWORK)
"""AutoGen AgentChat: an assistant and a user agent in a round-robin team."""
LANGGRAPH = FrameworkEntry("langgraph", "testbed.frameworks.langgraph_tools:LangGraphFramework",
                           modules=("langgraph", "langchain_openai"), **_AGENT_FRAMEWORK)
"""LangGraph: a two-node state graph with conditional edges."""
CAMEL = FrameworkEntry("camel", "testbed.frameworks.camel_tools:CamelFramework", modules=("camel",), **_AGENT_FRAMEWORK)
"""CAMEL: a role-playing society of two chat agents."""
