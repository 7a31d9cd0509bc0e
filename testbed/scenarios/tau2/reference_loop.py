"""τ²-bench's own loop as a framework: its `Orchestrator`, `LLMAgent` and `UserSimulator`, calling the models through litellm.

The benchmark's reference loop on the testbed's servers, built as τ²'s `run_task` builds it: an
`LLMAgent` with the domain's tools and policy, a `UserSimulator` with the user's tools (telecom's
phone) and, as `llm`, litellm's OpenAI-compatible route (`openai/<model>`) with `llm_args` carrying
the endpoint's base URL and key, the side's sampling, its timeout and retries, and the wire
recorder's headers when the run keeps a wire log (so every request passes the recorder and shows in
the wire log; litellm builds and caches its own HTTP client per route). τ²'s orchestrator is
synchronous: each episode runs it in a worker thread, then its new messages are recorded into the
episode (testbed.scenarios.tau2.reference_records) and its termination mapped to the testbed's.

Where it departs from `tau2 run`, and why:

- The environment is the episode's own (`episode.desk.environment`), which `start_episode` already
  gave the task's initial state. τ²'s `Orchestrator.initialize` would apply it again
  (`environment.set_state`: initialisation data, initialisation actions and the message history's
  tool calls replayed a second time), so `EpisodeOrchestrator` leaves out that one step
  (`_initialize_environment`) and keeps the rest of τ²'s initialisation: agent and user states from
  the history, its greeting when there is none, the seeds.
- The task τ²'s orchestrator is given is the episode's opening as τ²'s initial state (the transcript
  after its system prompt, converted back to τ²'s messages; none when it is only τ²'s greeting, so τ²
  writes its own): with the environment already set, that and an id are all τ²'s orchestrator reads
  of a task. The episode does not carry the task itself, so the SimulationRun's `task_id` is
  `EPISODE_TASK_ID`.
- The user's system prompt is the episode's (`episode.user.prompt`): the scenario's user prompt file
  filled with τ²'s simulation guidelines and the task's scenario. With the default file that is
  τ²'s own UserSimulator prompt (and the file's final newline); a scenario's own file (a different wording, a mock server's
  directive) is kept, as every framework keeps it. The agent's prompt is τ²'s own, which is the
  episode's system prompt.

What τ²'s loop does that the native one does not, and the wire log shows: each side's seed is fixed
for the episode (the native user adds the turn index); litellm sends `tool_choice: "auto"` with the
tools and the user's tool calls' arguments re-serialised; a tool call whose arguments are not JSON
makes τ²'s agent raise (an episode error), where the native loop answers it with a tool error; an
empty reply is asked again up to the endpoint's retries. τ²'s LLMAgent does not stop on the assistant's
`###STOP###` (only its solo agent does); where the episode's step rules would have, the episode is an
error saying so (testbed.scenarios.tau2.reference_records.termination_of).

A cancelled episode stops at τ²'s next step (the request in flight is finished first: a thread
cannot be interrupted).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from testbed.backends.base import BackendError
from testbed.frameworks.pair import Pair, Side
from testbed.frameworks.run_log import framework_failure
from testbed.frameworks.tool_episode import ToolEpisode
from testbed.loop.orchestrator import TerminationReason
from testbed.scenarios.tau2.domains import tau2_registry
from testbed.scenarios.tau2.reference_records import record_trajectory, termination_of
from testbed.scenarios.tau2.trajectory import GREETING, to_tau2
from testbed.transcript import is_assistant, is_tool

tau2_registry()

from tau2.agent.llm_agent import LLMAgent  # noqa: E402
from tau2.data_model.simulation import SimulationRun  # noqa: E402
from tau2.data_model.tasks import InitialState, Task, UserScenario  # noqa: E402
from tau2.orchestrator.orchestrator import Orchestrator  # noqa: E402
from tau2.user.user_simulator import UserSimulator  # noqa: E402

NAME = "tau2"
EPISODE_TASK_ID = "testbed-episode"
"""The task id of the SimulationRun: the task τ²'s orchestrator is given is built from the episode, which has no id."""
THREADS = ThreadPoolExecutor(max_workers=512, thread_name_prefix="tau2-episode")
"""The worker threads episodes run in (started as needed): τ²'s orchestrator holds one for a whole episode, waiting on
its requests, so asyncio's default pool (cores + 4) would cap concurrent episodes below the run's slots, which bound them."""


class EpisodeCancelled(Exception):
    """Raised in the worker thread before τ²'s next step once the episode's task was cancelled, to end its loop there."""


def litellm_args(side: Side) -> dict[str, Any]:
    """τ²'s `llm_args` for one side: where litellm sends (the endpoint, through the wire recorder on its route), the
    side's sampling, the timeout and the endpoint's retries (`num_retries`, which τ² also reads for empty replies)."""
    e, s = side.endpoint, side.sampling
    args: dict[str, Any] = {"api_base": e.base_url, "api_key": e.api_key, "temperature": s.temperature, "max_tokens": s.max_tokens,
                            "top_p": s.top_p, "timeout": e.timeout_s, "num_retries": e.max_retries}
    if s.seed is not None:
        args["seed"] = s.seed
    if e.headers:
        args["extra_headers"] = dict(e.headers)
    return args


def litellm_model(side: Side) -> str:
    """litellm's name for the side's model on an OpenAI-compatible server."""
    return f"openai/{side.endpoint.model}"


class EpisodeUser(UserSimulator):
    """τ²'s UserSimulator with the episode's user prompt as its system prompt (see the module's docstring)."""

    def __init__(self, prompt: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.prompt = prompt

    @property
    def system_prompt(self) -> str:
        """The episode's user prompt."""
        return self.prompt


class EpisodeOrchestrator(Orchestrator):
    """τ²'s Orchestrator on an environment that already holds the task's initial state.

    It also notes what the episode records: `opened`, how many of its trajectory's messages are the
    opening, and `latency_s`, each generated message's step time by its index in the trajectory.
    """

    def __init__(self, *args: Any, cancelled: threading.Event, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.cancelled = cancelled
        self.opened = 0
        self.latency_s: dict[int, float] = {}

    def _initialize_environment(self, initialization_data, initialization_actions, message_history) -> None:
        """Nothing: `start_episode` set the episode's environment to the task's initial state already."""

    def initialize(self) -> None:
        """τ²'s initialisation, the environment's left out; the opening's length noted."""
        super().initialize()
        self.opened = len(self.trajectory)

    def step(self) -> None:
        """One τ² step, timed when it generates a message; EpisodeCancelled once the episode was cancelled."""
        if self.cancelled.is_set():
            raise EpisodeCancelled()
        index, began = len(self.trajectory), time.perf_counter()
        super().step()
        if len(self.trajectory) > index and not is_tool(self.trajectory[index]):
            self.latency_s[index] = time.perf_counter() - began


def opening_task(episode: ToolEpisode) -> Task:
    """The task τ²'s orchestrator is given: the episode's opening as its message history (none when the opening is
    τ²'s greeting alone, which τ² then writes itself)."""
    history = to_tau2(episode.transcript.messages)
    greeting_only = len(history) == 1 and is_assistant(history[0]) and history[0].content == GREETING
    initial = None if greeting_only or not history else InitialState(message_history=history)
    return Task(id=EPISODE_TASK_ID, user_scenario=UserScenario(instructions=episode.user.prompt), initial_state=initial)


def build(episode: ToolEpisode, pair: Pair, cancelled: threading.Event) -> EpisodeOrchestrator:
    """τ²'s agent, user and orchestrator for the episode (`pair` its sides' settings), on its environment, with its
    step and error limits. A scripted user (testbed.scenarios.tau2.scripted_user) is τ²'s user as a ScriptedTau2User,
    so τ²'s loop faces the same user as the native one."""
    environment = episode.desk.environment
    agent = LLMAgent(tools=environment.get_tools(), domain_policy=environment.get_policy(),
                     llm=litellm_model(pair.assistant), llm_args=litellm_args(pair.assistant))
    script = getattr(episode.user, "script", None)
    if script is not None:
        from testbed.scenarios.tau2.scripted_user_tau2 import ScriptedTau2User

        user = ScriptedTau2User(script, pair.user.system_prompt)
    else:
        user_tools = environment.get_user_tools() if environment.user_tools is not None else None
        user = EpisodeUser(pair.user.system_prompt, tools=user_tools or None, instructions=None,
                           llm=litellm_model(pair.user), llm_args=litellm_args(pair.user))
    return EpisodeOrchestrator(domain=environment.domain_name, agent=agent, user=user, environment=environment,
                               task=opening_task(episode), max_steps=episode.max_steps, max_errors=episode.max_errors,
                               cancelled=cancelled)


async def orchestrate(episode: ToolEpisode) -> tuple[TerminationReason, SimulationRun]:
    """Run the episode with τ²'s orchestrator; its termination and τ²'s own SimulationRun (what τ²'s evaluator scores).

    Whatever the orchestrator did is recorded into the episode, also when it failed: a litellm or τ² failure
    is a BackendError (`framework_failure`) with the transcript so far.
    """
    cancelled = threading.Event()
    pair = episode.pair()
    orchestrator = build(episode, pair, cancelled)
    context = contextvars.copy_context()
    try:
        simulation = await asyncio.get_running_loop().run_in_executor(THREADS, context.run, orchestrator.run)
    except asyncio.CancelledError:
        cancelled.set()
        raise
    except Exception as exc:
        record_trajectory(episode, orchestrator.trajectory, orchestrator.opened, orchestrator.latency_s, pair)
        raise framework_failure(NAME, exc) from exc
    record_trajectory(episode, orchestrator.trajectory, orchestrator.opened, orchestrator.latency_s, pair)
    return termination_of(episode, str(simulation.termination_reason.value)), simulation


class Tau2Framework:
    """τ²-bench's orchestrator as a framework: it runs τ² tasks only."""

    name = NAME

    async def run_task(self, episode: ToolEpisode) -> TerminationReason:
        """Run a τ² task with τ²'s orchestrator, agent and user simulator; return why it ended."""
        termination, _ = await orchestrate(episode)
        return termination

    async def converse(self, transcript, assistant, user, limits, after_assistant=None) -> TerminationReason:
        """Refused: τ²'s orchestrator runs τ² tasks, not dialogues."""
        raise BackendError("the tau2 framework runs only τ² tasks (scenario kind tau2): use another framework for dialogues")
