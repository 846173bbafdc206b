"""One validated settings object, merged from CLI > YAML profile > ini > defaults.

Every field of :class:`Settings` is a setting: its name gives the CLI option ``--osworld-<name>``
(underscores as dashes), the ini key ``osworld_<name>`` and the profile key ``<name>``. Fields marked
``profile_only`` take structured values and are set in the profile only. Validation happens once,
and an error names the key and where its value came from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from pytest_osworld.errors import SettingsError
from pytest_osworld.live.address import LiveAddress
from pytest_osworld.sandbox.units import ByteCount
from pytest_osworld.tasks.shard import Shard

CLI_PREFIX = "--osworld-"
INI_PREFIX = "osworld_"
# OSWorld's VM image as its own runs use it, pinned by registry digest.
OSWORLD_VM_IMAGE = "happysixd/osworld-docker@sha256:0e6497a9295647cf05bf2b2af522fdd79bdeba2737595259cab310a3bcf6baa9"


# What --osworld-compat sets: OSWorld's run script defaults (run.py, lib_run_single.py) for every
# knob of the agent loop, so a run's scores compare with the leaderboard's.
OSWORLD_LOOP: dict[str, Any] = {
    "observation": "a11y_tree",
    "max_steps": 50,
    "history_steps": 3,  # max_trajectory_length
    "history_images": 3,
    "temperature": 1.0,
    "top_p": 0.9,
    "max_tokens": 1500,
    "settle": 0.0,  # sleep_after_execution
    "wait_seconds": 0.0,  # a WAIT sleeps the pause twice: 2 x sleep_after_execution
    "screen_width": 1920,
    "screen_height": 1080,
    "action_timeout": 120.0,  # the guest's and the client's limit on /execute
    "start_settle": 60.0,  # time.sleep(60) after env.reset(), before the first observation
    "eval_settle": 20.0,  # time.sleep(20) before env.evaluate()
}

EvalSettle = Literal["quiet"] | Annotated[float, Field(ge=0)]


def _profile_only(description: str) -> Any:
    return {"description": description, "json_schema_extra": {"profile_only": True}}


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    # --- the run
    run_id: str | None = Field(
        None, description="name of this run's folder under the report dir (default: a timestamp)"
    )
    report_dir: Path = Field(Path("reports"), description="where runs are written")
    shard: Shard | None = Field(None, description="run shard I of N (1-based), e.g. 2/4")
    repeat: int = Field(1, ge=1, description="run each task this many times")
    app_keywords: bool = Field(
        False,
        description="also make each related app a -k keyword (then -k chrome selects multi-app tasks touching Chrome too)",
    )
    resume: Path | None = Field(None, description="a run folder: run only its missing and masked tasks")
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
    v2_image: bool = Field(
        False,
        description="the sandbox runs OSWorld-V2's VM image: V2 tasks use its guest password "
        "(osworld-public-evaluation) for {CLIENT_PASSWORD}",
    )

    # --- the agent and the episode
    agent: str | None = Field(None, description="runner name: oracle, null, pyautogui, computer_13 or a plugin's")
    max_steps: int = Field(15, ge=1, description="most agent steps per episode")
    episode_timeout: float = Field(3600.0, gt=0, description="wall-clock limit of the agent loop, seconds")
    observation: Literal["screenshot", "a11y_tree", "screenshot_a11y_tree", "som"] = Field(
        "screenshot", description="what the runner sees each step"
    )
    settle: float = Field(0.5, ge=0, description="seconds to let the screen settle after an action")
    wait_seconds: float = Field(2.0, ge=0, description="how long a WAIT action waits, seconds")
    action_timeout: float = Field(
        120.0, gt=0, description="seconds an action may run in the guest before it is killed (the step records it)"
    )
    eval_settle: EvalSettle = Field(
        "quiet",
        description="before evaluation: quiet (wait until the screen and the result files stop changing, "
        "at most 20 s) or a number of seconds to wait (20 is OSWorld's)",
    )
    start_settle: EvalSettle = Field(
        "quiet",
        description="after setup, before the first observation: quiet (wait until the screen stops changing, "
        "at most 60 s) or a number of seconds to wait (60 is OSWorld's)",
    )
    compat: bool = Field(
        False,
        description="OSWorld's run script defaults for every loop knob (observation, steps, history, sampling, "
        "pauses, 20 s before evaluation), for scores comparable with its leaderboard",
    )
    guest_ready_timeout: float = Field(60.0, gt=0, description="seconds for the guest API to answer before setup")

    # --- the model endpoint
    model_url: str | None = Field(None, description="model endpoint base URL, e.g. http://gpu:8000/v1")
    model: str | None = Field(None, description="model name at the endpoint")
    model_api: Literal["openai", "anthropic"] = Field("openai", description="endpoint protocol")
    model_key_env: str | None = Field(None, description="name of the environment variable that holds the API key")
    temperature: float | None = Field(None, ge=0, description="sampling temperature")
    top_p: float | None = Field(None, gt=0, le=1, description="nucleus sampling")
    max_tokens: int | None = Field(None, ge=1, description="most tokens per model answer")
    model_timeout: float = Field(300.0, gt=0, description="seconds to wait for one model answer")
    model_retries: int = Field(5, ge=0, description="retries of a 429, 5xx or timeout before the task is masked")
    prompt_price: float | None = Field(None, ge=0, description="price per million prompt tokens (for cost)")
    completion_price: float | None = Field(None, ge=0, description="price per million completion tokens")
    model_backoff: float = Field(
        1.0, ge=0, description="seconds before the first retry of a model request (doubles each retry, with jitter)"
    )

    # --- the LLM judge and simulated user of OSWorld-V2 tasks (docs/v2-tasks.md): given on the command
    # line they win over OSWORLD_EVAL_MODEL_*; from a profile or the ini file the environment wins
    judge_url: str | None = Field(None, description="LLM judge endpoint base URL, e.g. http://gpu:8000/v1")
    judge_model: str | None = Field(None, description="LLM judge model name (default: the task's, gpt-4o)")
    judge_provider: Literal["openai", "openai_compatible", "anthropic", "claude"] | None = Field(
        None, description="LLM judge protocol: openai, openai_compatible, anthropic or claude (default openai)"
    )
    judge_key_env: str | None = Field(
        None, description="name of the environment variable that holds the LLM judge's API key"
    )
    judge_timeout: float = Field(120.0, gt=0, description="seconds to wait for one LLM judge answer")
    judge_prompt_price: float | None = Field(None, ge=0, description="LLM judge price per million prompt tokens")
    judge_completion_price: float | None = Field(
        None, ge=0, description="LLM judge price per million completion tokens"
    )

    # --- what a model-driven runner shows the model
    screenshot_max_width: int | None = Field(
        None, ge=64, description="shrink screenshots to at most this width for the model (coordinates are mapped back)"
    )
    screenshot_max_height: int | None = Field(
        None, ge=64, description="shrink screenshots to at most this height for the model (coordinates are mapped back)"
    )
    relative_coordinates: bool = Field(
        False, description="the model gives coordinates in 0..1000 of the screen's width and height"
    )
    history_steps: int = Field(3, ge=0, description="past steps (the model's answers) repeated in each prompt")
    history_images: int = Field(3, ge=0, description="of those past steps, how many keep their screenshot")
    a11y_tree_max_chars: int = Field(
        40000, ge=1000, description="most characters of accessibility tree text in one prompt"
    )
    # --- the native computer-use runners (docs/agents.md#native-computer-use-runners)
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
    task_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict, **_profile_only("per task id: settings that override the run's for that task")
    )

    # --- the sandbox
    sandbox: str = Field("desktop", description="sandbox profile name: desktop, osworld-vm, vm or a profile's own")
    sandbox_profiles: dict[str, dict[str, Any]] = Field(
        default_factory=dict, **_profile_only("sandbox profiles by name, next to the built-in ones")
    )
    docker_host: list[str] = Field(
        default_factory=list, description="environment host URL[=capacity]; repeatable (default: DOCKER_HOST)"
    )
    reset: Literal["boot", "snapshot"] | None = Field(None, description="VM reset: cold boot or RAM snapshot")
    screen_width: int = Field(1920, ge=320, description="guest screen width")
    screen_height: int = Field(1080, ge=240, description="guest screen height")
    client_password: str = Field("password", description="the guest user's password ({CLIENT_PASSWORD})")
    sandbox_cpus: float | None = Field(None, gt=0, description="CPUs per sandbox (Docker nano_cpus)")
    sandbox_memory: ByteCount | None = Field(None, gt=0, description="memory per sandbox, e.g. 4g")
    sandbox_write_bps: ByteCount | None = Field(
        None, gt=0, description="disk write bandwidth per sandbox, bytes per second, e.g. 100m"
    )
    sandbox_write_iops: int | None = Field(None, gt=0, description="disk write operations per second per sandbox")
    sandbox_write_device: str | None = Field(
        None, description="block device on the environment host that write limits apply to (default: found)"
    )
    sandbox_start_timeout: float | None = Field(
        None, gt=0, description="seconds a sandbox may take to answer (default: the profile's)"
    )
    sandbox_leftover_age: float = Field(
        6 * 3600.0, gt=0, description="seconds after which a sandbox counts as left over even if its run looks alive"
    )
    upstream_vm_image: str = Field(
        OSWORLD_VM_IMAGE, description="OSWorld's VM image, pinned by digest (or by image id after docker load)"
    )
    upstream_vm_qcow2: Path | None = Field(
        None, description="the VM disk (Ubuntu.qcow2) on the environment host, mounted read-only"
    )
    upstream_vm_disk_size: str = Field("32G", description="osworld-vm: DISK_SIZE of the VM")
    upstream_vm_ram_size: str = Field("4G", description="osworld-vm: RAM_SIZE of the VM")
    upstream_vm_cpu_cores: int = Field(4, ge=1, description="osworld-vm: CPU_CORES of the VM")
    upstream_vm_kvm: bool = Field(True, description="osworld-vm: use KVM (without it QEMU emulates: KVM=N, very slow)")
    # --- the vm profile (QEMU in a runner container; see docs/vm.md)
    vm_accel: Literal["kvm", "tcg"] = Field(
        "kvm", description="vm: KVM (checked by booting a test guest) or tcg (emulation: slow, never chosen silently)"
    )
    vm_qcow2: Path | None = Field(
        None,
        description="vm: base disk on the environment host, e.g. OSWorld's Ubuntu.qcow2 (default: the project's VM image)",
    )
    vm_memory: ByteCount | None = Field(
        None, gt=0, description="vm: guest memory, e.g. 4g (default 2g, 4g with vm_qcow2)"
    )
    vm_cpus: int | None = Field(None, ge=1, description="vm: guest vCPUs (default 2, 4 with vm_qcow2)")
    vm_firmware: Literal["uefi", "bios"] = Field(
        "uefi", description="vm: firmware that boots vm_qcow2 (OSWorld's Ubuntu.qcow2 needs uefi)"
    )
    vm_restore_timeout: float = Field(
        120.0, gt=0, description="vm: seconds a snapshot restore may take before the sandbox falls back to a cold boot"
    )
    # --- sandboxes of failed tasks kept for a look (see docs/sandboxes.md)
    keep_failed: int = Field(
        0,
        ge=0,
        description="leave the sandboxes of up to N failed or masked tasks running until the run ends, "
        "for a look (listed by pytest-osworld sandboxes; 0: none)",
    )
    keep_failed_until_exit: bool = Field(
        False,
        description="with keep_failed: at the run's end, wait for Enter (or keep_failed_timeout) before "
        "removing the kept sandboxes",
    )
    keep_failed_timeout: float = Field(
        300.0, gt=0, description="with keep_failed_until_exit: the longest wait for Enter at the run's end, seconds"
    )
    # --- past one machine: the warm pool and the ray provider (see docs/scaling.md)
    warm_pool: int = Field(
        0,
        ge=0,
        description="ready sandboxes kept started ahead, each used by one task: per pytest process on a local "
        "sandbox, per node on ray (0: none, every task waits for its own start)",
    )
    ray_address: str = Field(
        "auto",
        description="ray: the cluster: auto (a Ray node runs on this machine), HOST:PORT of its head, or "
        "ray://HOST:PORT (Ray Client)",
    )
    ray_sandbox: str = Field(
        "desktop", description="ray: the sandbox each node starts: desktop, osworld-vm, vm or a profile's own"
    )
    ray_slot_resource: str = Field(
        "osworld_sandbox",
        description="ray: the custom resource each node declares, one unit per sandbox it may run at once",
    )
    ray_place_timeout: float = Field(
        600.0, gt=0, description="ray: seconds a sandbox may wait for a free slot before its task is masked"
    )
    ray_heartbeat_timeout: float = Field(
        30.0,
        gt=0,
        description="ray: seconds a node agent goes without a heartbeat of the run's process before it ends the "
        "run on its node (its warm pool and sandboxes: the run's process is gone)",
    )
    # --- shared services (see docs/services.md)
    # Before services: its validator checks the profile's entries over the presets' services.
    service_presets: list[str] = Field(
        default_factory=list,
        description="packaged service declarations to add, e.g. osworld-v2 (GitLab, mock websites); repeatable",
    )
    services: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        **_profile_only("shared services by name, beside the built-in ones (or adjusting them)"),
    )
    service_host_suffix: str = Field(
        "osworld.test", description="hostnames of shared services in a sandbox are <service>.<this suffix>"
    )
    service_restarts: int = Field(
        1, ge=0, description="times a shared service found down before a task is restarted before the task is masked"
    )
    proxy: bool = Field(
        False,
        description="OSWorld's enable_proxy: tasks with proxy: true get the proxy service, and the Chrome their "
        "setup launches goes through it",
    )
    until_timeout: float = Field(
        600.0, gt=0, description="longest an execute step's 'until' condition is polled, seconds"
    )

    # --- assets
    asset_cache: Path = Field(
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pytest-osworld" / "assets",
        description="content-addressed cache of downloaded task files",
    )
    offline: bool = Field(
        False,
        description="never download: read task files from the asset cache only; tasks that need live web "
        "sites are skipped",
    )
    url_rewrite: dict[str, str] = Field(
        default_factory=dict, **_profile_only("URL prefix -> mirror prefix, applied before any download")
    )

    # --- what is kept
    keep_screenshots: bool = Field(True, description="keep each step's screenshot")
    keep_model_io: bool = Field(False, description="keep the full model requests and answers")
    keep_video: bool = Field(False, description="record a video of each episode")

    # --- the gate
    baseline: Path | None = Field(None, description="a summary.json to compare this run against")
    max_drop: float | None = Field(None, ge=0, description="largest allowed drop of the success rate, in points")
    min_success: float | None = Field(None, ge=0, le=1, description="lowest allowed success rate, 0..1")
    max_masked: int | None = Field(None, ge=0, description="most masked tasks before the gate fails the run")
    gate_view: Literal["all", "valid", "no_gdrive"] = Field(
        "all", description="the view whose success rate the gate judges: all, valid or no_gdrive"
    )
    gate: Literal["paired", "fixed"] = Field(
        "paired",
        description="paired: fail on a drop beyond --osworld-max-drop only when it is significant at "
        "--osworld-alpha; fixed: fail on any drop beyond it",
    )
    alpha: float = Field(
        0.05, gt=0, lt=1, description="significance level of the paired gate's exact test (default 0.05)"
    )

    # --- the live page of the run (docs/live.md)
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

    @field_validator("shard", mode="before")
    @classmethod
    def _parse_shard(cls, value: Any) -> Any:
        return Shard.parse(value) if isinstance(value, str) else value

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

    @field_validator("service_presets")
    @classmethod
    def _presets(cls, value: list[str]) -> list[str]:
        from pytest_osworld.services.profiles import check_name

        return [check_name(name) for name in dict.fromkeys(value)]

    @field_validator("services")
    @classmethod
    def _services(cls, value: dict[str, dict[str, Any]], info: ValidationInfo) -> dict[str, dict[str, Any]]:
        from pytest_osworld.services.builtin import BUILTIN
        from pytest_osworld.services.model import ServiceConfigError
        from pytest_osworld.services.profiles import check_entries

        try:
            check_entries(BUILTIN, value, info.data.get("service_presets") or [])
        except ServiceConfigError as exc:
            # The error's label already says "services": each problem goes on as <service>.<key>: ...
            problems = [line.strip().removeprefix("services.") for line in str(exc).splitlines()]
            raise ValueError("; ".join(problems)) from None
        return value

    @field_validator("service_host_suffix")
    @classmethod
    def _suffix(cls, value: str) -> str:
        from pytest_osworld.services.model import check_suffix

        return check_suffix(value)

    @field_validator("ray_sandbox")
    @classmethod
    def _ray_sandbox(cls, value: str) -> str:
        if value == "ray":
            raise ValueError(
                "the sandbox each Ray node starts cannot be ray itself: desktop, osworld-vm, vm or a profile's"
            )
        return value

    @field_validator("docker_host", "service_presets", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("task_overrides")
    @classmethod
    def _override_keys(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        allowed = {name for name, f in Settings.model_fields.items() if name in TASK_OVERRIDABLE}
        for task_id, overrides in value.items():
            unknown = set(overrides) - allowed
            if unknown:
                raise ValueError(
                    f"task {task_id}: {', '.join(sorted(unknown))} cannot be set per task "
                    f"(allowed: {', '.join(sorted(allowed))})"
                )
        return value

    @model_validator(mode="after")
    def _osworld_loop(self) -> Settings:
        """With ``compat``, the loop knobs not given take OSWorld's values; a given one must agree."""
        if not self.compat:
            return self
        conflicts = []
        for name, value in OSWORLD_LOOP.items():
            if name not in self.model_fields_set:
                setattr(self, name, value)
            elif getattr(self, name) != value:
                conflicts.append(name)
        if conflicts:
            raise PydanticCustomError(
                "compat_conflict",
                "compat sets {settings}, and another value is given; leave one of them out",
                {"settings": ", ".join(f"{n} to {OSWORLD_LOOP[n]!r}" for n in conflicts), "keys": conflicts},
            )
        for task_id, overrides in self.task_overrides.items():
            differ = sorted(k for k, v in overrides.items() if k in OSWORLD_LOOP and v != OSWORLD_LOOP[k])
            if differ:
                raise PydanticCustomError(
                    "compat_conflict",
                    "compat sets {settings} for every task, and task_overrides of {task} change them",
                    {"settings": ", ".join(differ), "task": task_id, "keys": ["task_overrides"]},
                )
        return self

    def loop_record(self) -> dict[str, Any]:
        """The loop knobs of an episode with these settings, for its record and the run's summary."""
        knobs = {name: getattr(self, name) for name in OSWORLD_LOOP}
        return {
            "mode": "osworld-compat" if self.compat else "project defaults",
            "knobs": knobs,
            "differs": {
                name: {"value": value, "osworld": OSWORLD_LOOP[name]}
                for name, value in knobs.items()
                if value != OSWORLD_LOOP[name]
            },
        }

    @property
    def runner_name(self) -> str | None:
        """The runner to use: the one asked for, else the generic model runner when a model is given."""
        return self.agent or ("pyautogui" if self.model_url else None)

    def for_task(self, task_id: str) -> Settings:
        """These settings with the task's overrides applied."""
        overrides = self.task_overrides.get(task_id)
        if not overrides:
            return self
        return Settings.model_validate({**self.model_dump(), **overrides})


# Settings that may differ per task: sampling and episode bounds, never identity or infrastructure.
TASK_OVERRIDABLE = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_steps",
        "episode_timeout",
        "settle",
        "wait_seconds",
        "action_timeout",
        "start_settle",
        "eval_settle",
    }
)


def _is_profile_only(name: str) -> bool:
    extra = Settings.model_fields[name].json_schema_extra
    return isinstance(extra, dict) and bool(extra.get("profile_only"))


def _is_bool(name: str) -> bool:
    return Settings.model_fields[name].annotation is bool


def _is_list(name: str) -> bool:
    return name in ("docker_host", "service_presets")


def _is_path(name: str) -> bool:
    annotation = Settings.model_fields[name].annotation
    return annotation is Path or annotation == (Path | None)


def cli_names() -> list[str]:
    return [n for n in Settings.model_fields if not _is_profile_only(n)]


def add_options(parser: Any) -> None:
    """Register ``--osworld-*`` options and ``osworld_*`` ini keys on a pytest parser."""
    group = parser.getgroup("osworld", "OSWorld tasks (pytest-osworld)")
    group.addoption(
        f"{CLI_PREFIX}profile",
        dest="osworld_profile",
        default=None,
        metavar="FILE",
        help="a YAML profile of settings (CLI > profile > ini > defaults)",
    )
    parser.addini("osworld_profile", "a YAML profile of settings", default=None)
    for name in cli_names():
        field = Settings.model_fields[name]
        flag = CLI_PREFIX + name.replace("_", "-")
        dest = INI_PREFIX + name
        help_text = field.description or name
        if _is_bool(name):
            group.addoption(flag, dest=dest, action="store_true", default=None, help=help_text)
            group.addoption(
                CLI_PREFIX + "no-" + name.replace("_", "-"),
                dest=dest,
                action="store_false",
                default=None,
                help=f"do not: {help_text}",
            )
        elif _is_list(name):
            group.addoption(flag, dest=dest, action="append", default=None, metavar="VALUE", help=help_text)
        else:
            group.addoption(flag, dest=dest, default=None, metavar="VALUE", help=help_text)
        parser.addini(dest, help_text, type="linelist" if _is_list(name) else "string", default=None)


def _source_label(source: str, key: str) -> str:
    if source == "cli":
        return CLI_PREFIX + key.replace("_", "-")
    if source == "ini":
        return f"ini key {INI_PREFIX}{key}"
    return f"{source}: {key}"


def _resolve_paths(values: dict[str, Any], base: Path) -> None:
    for key, value in values.items():
        if _is_path(key) and isinstance(value, str | Path) and value != "":
            path = Path(value).expanduser()
            values[key] = path if path.is_absolute() else base / path


def read_profile(path: Path) -> dict[str, Any]:
    """The settings mapping of a YAML profile, keys checked against the known settings."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"profile {path}: cannot read it: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SettingsError(f"profile {where}: not valid YAML: {getattr(exc, 'problem', exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"profile {path}: expected a mapping of settings, got {type(data).__name__}")
    # Profiles may write keys with dashes, as on the command line.
    data = {str(k).replace("-", "_"): v for k, v in data.items()}
    for key in data:
        if key not in Settings.model_fields:
            raise SettingsError(
                f"profile {path}: unknown setting {key!r}"
                + (f"; did you mean {close!r}?" if (close := _closest(key)) else "")
            )
    return data


def _closest(key: str) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, list(Settings.model_fields), n=1)
    return found[0] if found else None


def merge(
    *,
    cli: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
    profile_path: Path | None = None,
    ini: Mapping[str, Any] | None = None,
    ini_dir: Path | None = None,
    invocation_dir: Path | None = None,
) -> Settings:
    """Merge the layers (each maps setting name -> raw value) and validate once.

    Relative paths are taken from where they were written: the CLI's from the invocation folder,
    a profile's from the profile's folder, the ini file's from its folder.
    """
    layers: list[tuple[str, dict[str, Any]]] = []
    for source, values, base in (
        ("ini", dict(ini or {}), ini_dir),
        (
            f"profile {profile_path}" if profile_path else "profile",
            dict(profile or {}),
            profile_path.parent if profile_path else None,
        ),
        ("cli", dict(cli), invocation_dir),
    ):
        if base is not None:
            _resolve_paths(values, base)
        layers.append((source, values))
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    level: dict[str, int] = {}
    for rank, (source, values) in enumerate(layers):
        for key, value in values.items():
            merged[key] = value
            origin[key] = source
            level[key] = rank
    if _is_true(merged.get("compat")):
        # compat is a layer of its own just above the one that set it: it overrides the knobs of the
        # layers below (an ini file's max_steps), and one set beside or above it must agree with it.
        for key in [k for k in OSWORLD_LOOP if k in merged and level[k] < level["compat"]]:
            del merged[key]
    try:
        return Settings.model_validate(merged)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            if err["type"] == "compat_conflict":
                keys = (err.get("ctx") or {}).get("keys", [])
                where = ", ".join(_source_label(origin.get(k, "default"), k) for k in keys)
                problems.append(f"{_source_label(origin['compat'], 'compat')}: {err['msg']} (given by {where})")
                continue
            key = str(err["loc"][0]) if err["loc"] else "?"
            label = _source_label(origin.get(key, "default"), key)
            message = err["msg"].removeprefix("Value error, ")
            problems.append(
                f"{label}: {message} (got {err.get('input')!r})"
                if err["type"] != "value_error"
                else f"{label}: {message}"
            )
        raise SettingsError("invalid settings:\n  " + "\n  ".join(problems)) from None


def _is_true(value: Any) -> bool:
    """A raw setting value read as pydantic reads a bool ("yes", "1", True); an invalid one as false
    (validation then names it)."""
    try:
        return TypeAdapter(bool).validate_python(value) if value is not None else False
    except ValidationError:
        return False


def from_pytest_config(config: Any) -> Settings:
    """Build the settings from a pytest ``Config``: its options, its ini file and the profile."""
    cli = {
        name: config.getoption(INI_PREFIX + name)
        for name in cli_names()
        if config.getoption(INI_PREFIX + name) is not None
    }
    ini: dict[str, Any] = {}
    for name in cli_names():
        value = config.getini(INI_PREFIX + name)
        if value not in (None, "", []):  # an empty ini value is the same as none
            ini[name] = value
    ini_dir = Path(config.inipath).parent if config.inipath else Path(config.rootpath)
    invocation_dir = Path(config.invocation_params.dir)
    profile_arg = config.getoption("osworld_profile")
    profile_path: Path | None = None
    if profile_arg:
        profile_path = Path(profile_arg).expanduser()
        if not profile_path.is_absolute():
            profile_path = invocation_dir / profile_path
    elif config.getini("osworld_profile"):
        profile_path = ini_dir / Path(config.getini("osworld_profile")).expanduser()
    profile = read_profile(profile_path) if profile_path else None
    return merge(
        cli=cli, profile=profile, profile_path=profile_path, ini=ini, ini_dir=ini_dir, invocation_dir=invocation_dir
    )
