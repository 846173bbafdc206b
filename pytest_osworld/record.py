"""The result record of one task episode, and of each of its steps, with where its sandbox ran
(``Placement``: a pooled sandbox and every sandbox of the ``ray`` provider carry one in their
``describe()``, which the episode writes into the record's ``sandbox`` entry; the summary reads it back,
``TaskResult.placement``, for the claim time percentiles and the sandboxes per node).

A pure data module of the core layer: the models' accounting, the agents, the settle wait, the
services and the results all write or read it."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field

SCHEMA_VERSION = 1


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Placement(BaseModel):
    """One sandbox's placement and claim. Times in seconds."""

    model_config = ConfigDict(extra="allow")  # keys a later version adds stay readable

    provider: str  # "ray", or the local sandbox's name (desktop, vm, a profile's)
    node_id: str | None = None  # the Ray node's id; None on a local provider
    node_address: str | None = None  # the Ray node's address; the environment host on a local provider
    pooled: bool = False  # taken from a warm pool
    warm: bool | None = None  # pooled: a ready sandbox was there when the claim came; None: no pool
    pool_wait_seconds: float = 0.0  # waited for a sandbox to get ready (in the pool, or for a free Ray slot)
    claim_seconds: float = 0.0  # from the request until the task had it, the claim's check included
    verify_seconds: float | None = None  # of which the check that it is ready and clean (pooled only)
    rejected: int = 0  # pooled: ready sandboxes that failed that check first (destroyed; the next one taken)
    claimed_at: str | None = None  # ISO 8601

    @property
    def node(self) -> str:
        """What the summary counts sandboxes per: the Ray node's id, else the environment host."""
        return self.node_id or self.node_address or "?"


class Termination(StrEnum):
    """Why an episode ended. The first four end with a valid score; the rest are masks or skips."""

    DONE = "done"  # the agent said DONE
    FAIL = "fail"  # the agent said FAIL
    MAX_STEPS = "max_steps"  # the step budget ran out
    TIMEOUT = "timeout"  # the episode's wall-clock limit ran out (the state is still evaluated)
    SANDBOX_LOST = "sandbox_lost"  # the sandbox died or stopped answering mid-episode
    SANDBOX_ERROR = "sandbox_error"  # the sandbox could not be started
    SETUP_ERROR = "setup_error"  # a setup step failed
    MODEL_ERROR = "model_error"  # the model endpoint failed past its retries
    EVALUATOR_ERROR = "evaluator_error"  # a getter or metric crashed
    UNSUPPORTED = "unsupported"  # known before a sandbox starts: cannot run here (skipped)
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM (to the run, or to the worker when the run died)
    HARNESS_ERROR = "harness_error"  # the plugin, a fixture or an episode extension crashed unexpectedly
    SERVICE_ERROR = "service_error"  # a shared service the task needs was down, or died during the task
    JUDGE_ERROR = "judge_error"  # an LLM judge call of the evaluation failed or answered nothing (OSWorld-V2)
    USER_SIM_ERROR = "user_sim_error"  # the simulated user's model failed or answered nothing (OSWorld-V2)
    WORKER_LOST = "worker_lost"  # the xdist worker running the episode died (killed, out of memory)
    HUMAN_INTERFERENCE = "human_interference"  # a person sent input to the desktop through the live view


VALID_TERMINATIONS = frozenset({Termination.DONE, Termination.FAIL, Termination.MAX_STEPS, Termination.TIMEOUT})
MASK_TERMINATIONS = frozenset(
    {
        Termination.SANDBOX_LOST,
        Termination.SANDBOX_ERROR,
        Termination.SETUP_ERROR,
        Termination.MODEL_ERROR,
        Termination.EVALUATOR_ERROR,
        Termination.INTERRUPTED,
        Termination.HARNESS_ERROR,
        Termination.SERVICE_ERROR,
        Termination.JUDGE_ERROR,
        Termination.USER_SIM_ERROR,
        Termination.WORKER_LOST,
        Termination.HUMAN_INTERFERENCE,
    }
)


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None  # in the currency of the configured prices

    def add(self, other: Usage) -> Usage:
        cost = None if self.cost is None and other.cost is None else (self.cost or 0.0) + (other.cost or 0.0)
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cost=cost,
        )


class ModelCalls(BaseModel):
    """Model calls made beside the agent's (the LLM judge's, the simulated user's): counted apart."""

    calls: int = 0
    failed: int = 0  # any failed call masks the task (judge_error, user_sim_error)
    seconds: float = 0.0
    usage: Usage = Field(default_factory=Usage)


class Durations(BaseModel):
    """Seconds spent in each phase; a phase that did not run stays None."""

    sandbox_ready: float | None = None
    setup: float | None = None
    agent: float | None = None
    evaluation: float | None = None
    total: float | None = None


ExecuteStatus = Literal["ok", "error", "timeout"]


class StepRecord(BaseModel):
    """One action of an agent step, as ``traj.jsonl`` keeps it (upstream's keys first, then the project's).

    A step's screenshot is taken after its actions, as upstream's: it goes with the step's last line.
    """

    model_config = ConfigDict(extra="allow")

    step_num: int
    action_timestamp: str
    action: Any
    response: str | None = None
    reward: float = 0.0
    done: bool = False
    info: dict[str, Any] = Field(default_factory=dict)
    screenshot_file: str | None = None  # the screen after the step's actions (the next observation)
    parse_error: str | None = None
    model_seconds: float | None = None
    execute_seconds: float | None = None
    # How the action ended in the guest (None for WAIT/DONE/FAIL and unusable answers): ok; error
    # (it raised, exited non-zero, or the guest refused it); timeout (killed at action_timeout).
    execute_status: ExecuteStatus | None = None
    execute_error: str | None = None  # the end of its stderr, or why it did not run
    returncode: int | None = None
    usage: Usage = Field(default_factory=Usage)


class SettleRecord(BaseModel):
    """A wait for the guest to settle: after setup (``start_settle``) or before evaluation (``eval_settle``)."""

    mode: Literal["quiet", "fixed"]
    seconds: float  # waited
    limit: float  # quiet: the bound; fixed: the seconds asked for
    quiet: bool | None = None  # quiet mode: the screen and the watched files went quiet before the bound
    watched: list[str] = Field(default_factory=list)  # before evaluation: the paths the result getters read
    polls: int | None = None


class LoopRecord(BaseModel):
    """The agent loop's knobs an episode ran with, and those that differ from OSWorld's run script."""

    mode: Literal["osworld-compat", "project defaults"]
    knobs: dict[str, Any] = Field(default_factory=dict)
    differs: dict[str, dict[str, Any]] = Field(default_factory=dict)  # knob -> {"value": ..., "osworld": ...}


class ServiceRecord(BaseModel):
    """A shared service as one task used it (``TaskResult.services``)."""

    id: str  # the container's id: one per service and run, whichever worker started it
    image: str
    exclusive: bool = False
    waited_seconds: float = 0.0  # for its turn (an exclusive service), not counted in the episode's limits
    restarted: bool = False  # found down before this task and restarted
    held_at: str | None = None  # when this task's turn began (an exclusive service), ISO 8601
    state_key: str | None = None  # the value of the service's per-task state key (e.g. a cookie), if it has one


class RestartRecord(BaseModel):
    """A supervised process of the guest that was started again (``TaskResult.restarts``), as the
    guest reports it: an agent's action may kill the desktop's processes, and they come back."""

    process: str  # the supervised service: guest-server, xvfb, openbox, x11vnc, dbus
    at: str  # when it was started again, ISO 8601 (the guest's clock)
    exit_code: int | None = None  # how the process before it ended: its exit code,
    signal: int | None = None  # or the signal that killed it
    down_seconds: float | None = None  # from that end to this start


class HumanInput(BaseModel):
    """Input a person sent to the task's desktop through the live page's watch view (``live_input``): keys,
    pointer or clipboard messages that reached its VNC server. It voids the score (``human_interference``)."""

    first_at: str  # ISO 8601, the first message the bridge let through
    last_at: str  # the last one known when the episode ended
    messages: int  # input messages let through
    via: str = "live view"


class TaskResult(BaseModel):
    """What happened to one task in one run: written atomically to ``result.json`` the moment it ends."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    task_id: str
    domain: str
    repeat: int = 1
    score: float | None = None  # the evaluator's score as OSWorld gives it (not clamped); None when masked or skipped
    termination: Termination
    message: str | None = None  # why: sanitized, never a secret
    steps: int = 0
    metric_scores: list[float] = Field(default_factory=list)
    runner: str | None = None
    action_space: str | None = None
    model: dict[str, Any] = Field(default_factory=dict)  # api, name, endpoint host; never a key
    usage: Usage = Field(default_factory=Usage)
    # OSWorld-V2: the LLM judge's and the simulated user's calls, apart from the agent's usage; None when
    # the task made none, and in records written before they existed.
    judge: ModelCalls | None = None
    user_sim: ModelCalls | None = None
    # OSWorld-V2: what evaluate(env) returned when it was a dict (score derived from its "score"), and a
    # MultiPhaseTask's phases as they ran; None otherwise and in records written before they existed.
    evaluation: dict[str, Any] | None = None
    phase_results: list[dict[str, Any]] | None = None
    durations: Durations = Field(default_factory=Durations)
    # profile, image, image id/digest, host; ``placement`` where it ran and how it was had (a pooled or ray sandbox)
    sandbox: dict[str, Any] = Field(default_factory=dict)
    artifacts: dict[str, Any] = Field(default_factory=dict)  # names relative to the task folder
    setup_steps: list[dict[str, Any]] = Field(default_factory=list)  # each config/postconfig step as it ran
    # Both None in records written before they existed (and when the episode never got that far).
    start_settle: SettleRecord | None = None  # after setup, before the first observation
    settle: SettleRecord | None = None  # before the evaluation
    loop: LoopRecord | None = None
    services: dict[str, ServiceRecord] | None = None  # the shared services the task used, by name
    # The guest's supervised processes that restarted during the episode (an agent's action killed
    # them); [] when none did, None when the guest cannot say (OSWorld's VM, a lost sandbox) and in
    # records written before it existed.
    restarts: list[RestartRecord] | None = None
    # Set only when a person sent input to the desktop through the live view (the task is then masked
    # human_interference); None otherwise and in records written before it existed.
    human_input: HumanInput | None = None
    related_apps: list[str] = Field(default_factory=list)
    markers: list[str] = Field(default_factory=list)
    worker: str | None = None
    started_at: str | None = None
    finished_at: str | None = None

    @property
    def placement(self) -> Placement | None:
        """Where the sandbox ran and how the task got it (``sandbox.placement``); None without one."""
        found = self.sandbox.get("placement")
        if not isinstance(found, dict):
            return None
        try:
            return Placement.model_validate(found)
        except ValidationError:
            return None

    @property
    def key(self) -> str:
        base = f"{self.domain}/{self.task_id}"
        return base if self.repeat == 1 else f"{base}#r{self.repeat}"

    @computed_field  # type: ignore[prop-decorator]
    @property
    def masked(self) -> bool:
        return self.termination in MASK_TERMINATIONS

    @property
    def skipped(self) -> bool:
        return self.termination is Termination.UNSUPPORTED

    @property
    def valid(self) -> bool:
        """A valid score exists: the result counts in the success rates."""
        return self.termination in VALID_TERMINATIONS and self.score is not None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def success(self) -> bool | None:
        """Binary success: a full score. None when there is no valid score."""
        return None if not self.valid or self.score is None else self.score >= 1.0
