"""The settings' groups, as users think of them: one pydantic model per group, each field a setting.
Here the base and the groups of what a run does (model, judge, loop, reports, gate, tasks);
``infrastructure.py`` has those of where it runs (sandbox, vm, services).

A field's flat name (its alias, else its own name) is the setting's name outside the code: the CLI option
``--osworld-<flat>``, the ini key ``osworld_<flat>`` and the profile key ``<flat>``. ``title`` says what the
group is, in ``pytest --help`` and docs/settings.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from pytest_osworld.settings.address import LiveAddress
from pytest_osworld.tasks.shard import Shard

EvalSettle = Literal["quiet"] | Annotated[float, Field(ge=0)]

# Settings that may differ per task (flat names): sampling and episode bounds, never identity or infrastructure.
TASK_OVERRIDABLE = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_steps",
        "episode_timeout",
        "action_pause",
        "wait_seconds",
        "action_timeout",
        "start_settle",
        "eval_settle",
    }
)


# Flat names a setting had before it was renamed -> its name now. Each is still taken wherever a flat name
# is (the option --osworld-<old>, the ini key osworld_<old>, the profile key, Settings(<old>=...),
# settings.replace, task_overrides); docs/settings.md lists it beside the new name.
OLD_NAMES: dict[str, str] = {
    "settle": "action_pause",  # the pause after an action; "settle" is the wait after setup and before evaluation
}


def current_name(flat: str) -> str:
    """A flat name as the settings spell it now (an old spelling's new name, else the name itself)."""
    return OLD_NAMES.get(flat, flat)


def _profile_only(description: str) -> Any:
    return {"description": description, "json_schema_extra": {"profile_only": True}}


def _listify(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


class _Group(BaseModel):
    # populate_by_name: a group takes its fields' own names (the nested form) and their flat names.
    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=True)

    title: ClassVar[str]


class ModelGroup(_Group):
    title: ClassVar[str] = (
        "the model endpoint: where it is, how it is sampled and billed, and the native computer-use runners' protocol details"
    )
    url: str | None = Field(None, description="model endpoint base URL, e.g. http://gpu:8000/v1", alias="model_url")
    name: str | None = Field(None, description="model name at the endpoint", alias="model")
    api: Literal["openai", "anthropic"] = Field("openai", description="endpoint protocol", alias="model_api")
    key_env: str | None = Field(
        None, description="name of the environment variable that holds the API key", alias="model_key_env"
    )
    timeout: float = Field(300.0, gt=0, description="seconds to wait for one model answer", alias="model_timeout")
    retries: int = Field(
        5, ge=0, description="retries of a 429, 5xx or timeout before the task is masked", alias="model_retries"
    )
    backoff: float = Field(
        1.0,
        ge=0,
        description="seconds before the first retry of a model request (doubles each retry, with jitter)",
        alias="model_backoff",
    )
    temperature: float | None = Field(None, ge=0, description="sampling temperature")
    top_p: float | None = Field(None, gt=0, le=1, description="nucleus sampling")
    max_tokens: int | None = Field(None, ge=1, description="most tokens per model answer")
    prompt_price: float | None = Field(None, ge=0, description="price per million prompt tokens (for cost)")
    completion_price: float | None = Field(None, ge=0, description="price per million completion tokens")
    anthropic_tool: Literal["computer_20250124", "computer_20251124"] = Field(
        "computer_20250124",
        description="anthropic-computer: the computer tool version (computer_20251124, with zoom, for the models "
        "Anthropic documents it for); its beta header goes with it",
    )
    anthropic_zoom: bool = Field(
        True, description="anthropic-computer with computer_20251124: declare the zoom action (enable_zoom)"
    )
    openai_environment: Literal["linux", "ubuntu", "windows", "mac", "browser"] = Field(
        "linux", description="openai-computer: the environment declared to the computer_use_preview tool"
    )
    openai_chaining: Literal["previous_response_id", "items"] = Field(
        "previous_response_id",
        description="openai-computer: chain turns by previous_response_id, or send every item back (reasoning "
        "items included)",
    )
    acknowledge_safety_checks: bool = Field(
        False,
        description="openai-computer: acknowledge the model's pending safety checks and go on (otherwise the "
        "episode ends there, recorded as such)",
    )
    uitars_coordinates: Literal["absolute", "relative"] = Field(
        "absolute",
        description="uitars: the model's coordinates are pixels of the resized screenshot (UI-TARS-1.5, "
        "Qwen2.5-VL) or relative 0..1000 (UI-TARS 1.0, Qwen3-VL)",
    )
    uitars_factor: int = Field(
        28, ge=1, description="uitars: the image processor's patch factor for smart_resize (28; Qwen3-VL 32)"
    )
    uitars_min_pixels: int = Field(100 * 28 * 28, ge=1, description="uitars: smart_resize's smallest image area")
    uitars_max_pixels: int = Field(16384 * 28 * 28, ge=1, description="uitars: smart_resize's largest image area")


class JudgeGroup(_Group):
    title: ClassVar[str] = (
        "the LLM judge of OSWorld-V2 tasks, which is also the simulated user's model unless OSWORLD_USER_SIM_* say otherwise"
    )
    url: str | None = Field(None, description="LLM judge endpoint base URL, e.g. http://gpu:8000/v1", alias="judge_url")
    model: str | None = Field(
        None, description="LLM judge model name (default: the task's, gpt-4o)", alias="judge_model"
    )
    provider: Literal["openai", "openai_compatible", "anthropic", "claude"] | None = Field(
        None,
        description="LLM judge protocol: openai, openai_compatible, anthropic or claude (default openai)",
        alias="judge_provider",
    )
    key_env: str | None = Field(
        None, description="name of the environment variable that holds the LLM judge's API key", alias="judge_key_env"
    )
    timeout: float = Field(120.0, gt=0, description="seconds to wait for one LLM judge answer", alias="judge_timeout")
    prompt_price: float | None = Field(
        None, ge=0, description="LLM judge price per million prompt tokens", alias="judge_prompt_price"
    )
    completion_price: float | None = Field(
        None, ge=0, description="LLM judge price per million completion tokens", alias="judge_completion_price"
    )


class LoopGroup(_Group):
    title: ClassVar[str] = (
        "the episode's agent loop: the runner, its steps and what each shows the model, the pauses and time limits"
    )
    agent: str | None = Field(None, description="runner name: oracle, null, pyautogui, computer_13 or a plugin's")
    max_steps: int = Field(15, ge=1, description="most agent steps per episode")
    episode_timeout: float = Field(3600.0, gt=0, description="wall-clock limit of the agent loop, seconds")
    observation: Literal["screenshot", "a11y_tree", "screenshot_a11y_tree", "som"] = Field(
        "screenshot", description="what the runner sees each step"
    )
    history_steps: int = Field(3, ge=0, description="past steps (the model's answers) repeated in each prompt")
    history_images: int = Field(3, ge=0, description="of those past steps, how many keep their screenshot")
    screenshot_max_width: int | None = Field(
        None, ge=64, description="shrink screenshots to at most this width for the model (coordinates are mapped back)"
    )
    screenshot_max_height: int | None = Field(
        None, ge=64, description="shrink screenshots to at most this height for the model (coordinates are mapped back)"
    )
    relative_coordinates: bool = Field(
        False, description="the model gives coordinates in 0..1000 of the screen's width and height"
    )
    a11y_tree_max_chars: int = Field(
        40000, ge=1000, description="most characters of accessibility tree text in one prompt"
    )
    action_pause: float = Field(
        0.5,
        ge=0,
        description="seconds to pause after an action, for the screen to catch up (OSWorld's sleep_after_execution)",
    )
    wait_seconds: float = Field(2.0, ge=0, description="how long a WAIT action waits, seconds")
    action_timeout: float = Field(
        120.0, gt=0, description="seconds an action may run in the guest before it is killed (the step records it)"
    )
    start_settle: EvalSettle = Field(
        "quiet",
        description="after setup, before the first observation: quiet (wait until the screen stops changing, "
        "at most 60 s) or a number of seconds to wait (60 is OSWorld's)",
    )
    eval_settle: EvalSettle = Field(
        "quiet",
        description="before evaluation: quiet (wait until the screen and the result files stop changing, "
        "at most 20 s) or a number of seconds to wait (20 is OSWorld's)",
    )
    guest_ready_timeout: float = Field(60.0, gt=0, description="seconds for the guest API to answer before setup")
    until_timeout: float = Field(
        600.0, gt=0, description="longest an execute step's 'until' condition is polled, seconds"
    )
    compat: bool = Field(
        False,
        description="OSWorld's run script defaults for every loop knob (observation, steps, history, sampling, "
        "pauses, 20 s before evaluation), for scores comparable with its leaderboard",
    )
    task_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict, **_profile_only("per task id: settings that override the run's for that task")
    )

    @field_validator("eval_settle", "start_settle", mode="before")
    @classmethod
    def _settle_mode(cls, value: Any) -> Any:
        """One message for both forms (the union would give one per member)."""
        if isinstance(value, str) and value.strip() == "quiet":
            return "quiet"
        try:
            if isinstance(value, bool):
                raise TypeError  # YAML's yes/no: not seconds
            seconds = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"expected quiet or a number of seconds, got {value!r}") from None
        if seconds < 0:
            raise ValueError(f"expected quiet or a number of seconds (0 or more), got {value!r}")
        return seconds

    @field_validator("task_overrides", mode="before")
    @classmethod
    def _override_old_names(cls, value: Any) -> Any:
        if not isinstance(value, Mapping):
            return value
        return {
            task_id: {current_name(str(k)): v for k, v in overrides.items()}
            if isinstance(overrides, Mapping)
            else overrides
            for task_id, overrides in value.items()
        }

    @field_validator("task_overrides")
    @classmethod
    def _override_keys(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for task_id, overrides in value.items():
            unknown = set(overrides) - TASK_OVERRIDABLE
            if unknown:
                raise ValueError(
                    f"task {task_id}: {', '.join(sorted(unknown))} cannot be set per task "
                    f"(allowed: {', '.join(sorted(TASK_OVERRIDABLE))})"
                )
        return value


class ReportsGroup(_Group):
    title: ClassVar[str] = (
        "the run's folder, resuming an earlier run, what is kept of each episode, and the live page of the run"
    )
    run_id: str | None = Field(
        None, description="name of this run's folder under the report dir (default: a timestamp)"
    )
    dir: Path = Field(Path("reports"), description="where runs are written", alias="report_dir")
    resume: Path | None = Field(None, description="a run folder: run only its missing and masked tasks")
    keep_screenshots: bool = Field(True, description="keep each step's screenshot")
    keep_model_io: bool = Field(False, description="keep the full model requests and answers")
    keep_video: bool = Field(False, description="record a video of each episode")
    live: LiveAddress | None = Field(
        None,
        description="serve a live page of the run at [HOST:]PORT while it lasts (a bare port listens on "
        "127.0.0.1 only; 0 picks a free port)",
    )
    live_input: bool = Field(
        False,
        description="the live page's watch view may send keys and mouse to a task's desktop when asked to "
        "(a task a person touched is masked human_interference)",
    )
    live_novnc: Path | None = Field(
        None, description="the folder of noVNC's files for the watch view (default: /usr/share/novnc, Debian's novnc)"
    )

    @field_validator("live", mode="before")
    @classmethod
    def _parse_live(cls, value: Any) -> Any:
        return LiveAddress.parse(str(value)) if isinstance(value, str | int) and not isinstance(value, bool) else value


class GateGroup(_Group):
    title: ClassVar[str] = (
        "the run's exit status: its success rate against a baseline or a floor, and how many tasks may be masked"
    )
    baseline: Path | None = Field(None, description="a summary.json to compare this run against")
    max_drop: float | None = Field(None, ge=0, description="largest allowed drop of the success rate, in points")
    min_success: float | None = Field(None, ge=0, le=1, description="lowest allowed success rate, 0..1")
    max_masked: int | None = Field(None, ge=0, description="most masked tasks before the gate fails the run")
    view: Literal["all", "valid", "no_gdrive"] = Field(
        "all", description="the view whose success rate the gate judges: all, valid or no_gdrive", alias="gate_view"
    )
    mode: Literal["paired", "fixed"] = Field(
        "paired",
        description="paired: fail on a drop beyond --osworld-max-drop only when it is significant at "
        "--osworld-alpha; fixed: fail on any drop beyond it",
        alias="gate",
    )
    alpha: float = Field(
        0.05, gt=0, lt=1, description="significance level of the paired gate's exact test (default 0.05)"
    )


class TasksGroup(_Group):
    title: ClassVar[str] = (
        "which tasks run and how they are read: shards, repeats, -k keywords, task files' assets, OSWorld-V2 task files"
    )
    shard: Shard | None = Field(None, description="run shard I of N (1-based), e.g. 2/4")
    repeat: int = Field(1, ge=1, description="run each task this many times")
    app_keywords: bool = Field(
        False,
        description="also make each related app a -k keyword (then -k chrome selects multi-app tasks touching Chrome too)",
    )
    offline: bool = Field(
        False,
        description="never download: read task files from the asset cache only; tasks that need live web "
        "sites are skipped",
    )
    asset_cache: Path = Field(
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pytest-osworld" / "assets",
        description="content-addressed cache of downloaded task files",
    )
    url_rewrite: dict[str, str] = Field(
        default_factory=dict, **_profile_only("URL prefix -> mirror prefix, applied before any download")
    )
    v2_hashes: Path | None = Field(
        None,
        description="an OSWorld-V2 task-hash file (task-hashes.json or <release>.task_hashes.json): every V2 "
        "task file's SHA-256 must match it before the task runs",
    )
    v2_code: Path | None = Field(
        None,
        description="a checkout of OSWorld-V2's code: V2 task files import its own desktop_env instead of the "
        "project's (docs/v2-tasks.md#running)",
    )

    @field_validator("shard", mode="before")
    @classmethod
    def _parse_shard(cls, value: Any) -> Any:
        return Shard.parse(value) if isinstance(value, str) else value
