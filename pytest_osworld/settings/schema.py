"""``Settings``: the run's settings, one field per group (``settings.model.url``, ``settings.gate.alpha``).

Outside the code a setting has one flat name (``model_url``, ``alpha``): the CLI option, the ini key and the
profile key. ``Settings`` takes flat names as its input (``Settings(model_url=...)``,
``Settings.model_validate({"model_url": ...})``) and routes each to its group, so every layer of the merge
stays a flat mapping and an error names the key as the user wrote it. A group may also be given whole, as
its model.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from pytest_osworld.settings.groups import (
    OLD_NAMES,
    GateGroup,
    JudgeGroup,
    LoopGroup,
    ModelGroup,
    ReportsGroup,
    TasksGroup,
    _Group,
    current_name,
)
from pytest_osworld.settings.infrastructure import SandboxGroup, ServicesGroup, VmGroup

# What --osworld-compat sets (flat names): OSWorld's run script defaults (run.py, lib_run_single.py) for
# every knob of the agent loop, so a run's scores compare with the leaderboard's.
OSWORLD_LOOP: dict[str, Any] = {
    "observation": "a11y_tree",
    "max_steps": 50,
    "history_steps": 3,  # max_trajectory_length
    "history_images": 3,
    "temperature": 1.0,
    "top_p": 0.9,
    "max_tokens": 1500,
    "action_pause": 0.0,  # sleep_after_execution
    "wait_seconds": 0.0,  # a WAIT sleeps the pause twice: 2 x sleep_after_execution
    "screen_width": 1920,
    "screen_height": 1080,
    "action_timeout": 120.0,  # the guest's and the client's limit on /execute
    "start_settle": 60.0,  # time.sleep(60) after env.reset(), before the first observation
    "eval_settle": 20.0,  # time.sleep(20) before env.evaluate()
}

# A loop knob whose setting was renamed keeps, in the record's ``loop`` (its knobs and what differs), the
# name it was published under (docs/results.md), so records of old and new runs read alike.
RECORD_KNOBS: dict[str, str] = {"action_pause": "settle"}


def record_knobs(values: Mapping[str, Any]) -> dict[str, Any]:
    """Loop knobs by flat name, keyed as a record's ``loop`` keys them."""
    return {RECORD_KNOBS.get(name, name): value for name, value in values.items()}


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)

    # In this order in `pytest --help` and docs/settings.md.
    model: ModelGroup = Field(default_factory=ModelGroup)
    judge: JudgeGroup = Field(default_factory=JudgeGroup)
    loop: LoopGroup = Field(default_factory=LoopGroup)
    sandbox: SandboxGroup = Field(default_factory=SandboxGroup)
    vm: VmGroup = Field(default_factory=VmGroup)
    services: ServicesGroup = Field(default_factory=ServicesGroup)
    reports: ReportsGroup = Field(default_factory=ReportsGroup)
    gate: GateGroup = Field(default_factory=GateGroup)
    tasks: TasksGroup = Field(default_factory=TasksGroup)

    def __init__(self, **values: Any) -> None:
        """Settings by flat name (``Settings(model_url=..., max_steps=3)``), as every layer gives them."""
        super().__init__(**values)

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        """Flat names into their groups. ``model``, ``sandbox``, ``services`` and ``gate`` are flat names
        too (the model's name, the sandbox's, the services' declarations, the gate's mode): only a group's
        model instance given under its name is the group itself."""
        if not isinstance(data, Mapping):
            return data
        if any(isinstance(data.get(name), Mapping) for name in GROUPS if name not in FLAT):
            # The nested form (``model_dump()``'s: a group no flat name shares, e.g. ``loop``, given as a
            # mapping): every group's mapping is that group, so a dump validates back.
            return {
                key: {current_name(str(k)): v for k, v in value.items()}
                if key in GROUPS and isinstance(value, Mapping)
                else value
                for key, value in data.items()
            }
        routed: dict[str, Any] = {}
        for key, value in ((current_name(k), v) for k, v in data.items()):
            group_name = key if isinstance(value, _Group) else FLAT.get(key, (None, ""))[0]
            if group_name is None:
                routed[key] = value  # unknown: extra="forbid" names it
            elif isinstance(value, _Group):
                routed.setdefault(group_name, {}).update(value.model_dump(exclude_unset=True))
            else:
                routed.setdefault(group_name, {})[key] = value
        return routed

    @model_validator(mode="after")
    def _osworld_loop(self) -> Settings:
        """With ``compat``, the loop knobs not given take OSWorld's values; a given one must agree."""
        if not self.loop.compat:
            return self
        conflicts = []
        for name, value in OSWORLD_LOOP.items():
            if not self.given(name):
                self.set_value(name, value)
            elif self.value(name) != value:
                conflicts.append(name)
        if conflicts:
            raise PydanticCustomError(
                "compat_conflict",
                "compat sets {settings}, and another value is given; leave one of them out",
                {"settings": ", ".join(f"{n} to {OSWORLD_LOOP[n]!r}" for n in conflicts), "keys": conflicts},
            )
        for task_id, overrides in self.loop.task_overrides.items():
            differ = sorted(k for k, v in overrides.items() if k in OSWORLD_LOOP and v != OSWORLD_LOOP[k])
            if differ:
                raise PydanticCustomError(
                    "compat_conflict",
                    "compat sets {settings} for every task, and task_overrides of {task} change them",
                    {"settings": ", ".join(differ), "task": task_id, "keys": ["task_overrides"]},
                )
        return self

    # --- by flat name (the option's, ini key's and profile key's; an old spelling is taken too)
    def value(self, flat: str) -> Any:
        group, field = FLAT[current_name(flat)]
        return getattr(getattr(self, group), field)

    def set_value(self, flat: str, value: Any) -> None:
        group, field = FLAT[current_name(flat)]
        setattr(getattr(self, group), field, value)

    def given(self, flat: str) -> bool:
        """Whether the setting was given (by any layer), not left at its default."""
        group, field = FLAT[current_name(flat)]
        return field in getattr(self, group).model_fields_set

    def flat(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """Every setting by its flat name: what ``Settings.model_validate`` takes back."""
        return {
            flat: value
            for group in GROUPS
            for flat, value in getattr(self, group).model_dump(mode=mode, by_alias=True).items()
        }

    def replace(self, **flat: Any) -> Settings:
        """A copy with some settings (by flat name) replaced, unvalidated as ``model_copy``'s update."""
        update: dict[str, dict[str, Any]] = {}
        for name, value in flat.items():
            group, field = FLAT[current_name(name)]
            update.setdefault(group, {})[field] = value
        return self.model_copy(
            update={group: getattr(self, group).model_copy(update=values) for group, values in update.items()}
        )

    def loop_record(self) -> dict[str, Any]:
        """The loop knobs of an episode with these settings, for its record and the run's summary."""
        knobs = {name: self.value(name) for name in OSWORLD_LOOP}
        return {
            "mode": "osworld-compat" if self.loop.compat else "project defaults",
            "knobs": record_knobs(knobs),
            "differs": record_knobs(
                {
                    name: {"value": value, "osworld": OSWORLD_LOOP[name]}
                    for name, value in knobs.items()
                    if value != OSWORLD_LOOP[name]
                }
            ),
        }

    @property
    def runner_name(self) -> str | None:
        """The runner to use: the one asked for, else the generic model runner when a model is given."""
        return self.loop.agent or ("pyautogui" if self.model.url else None)

    def for_task(self, task_id: str) -> Settings:
        """These settings with the task's overrides applied."""
        overrides = self.loop.task_overrides.get(task_id)
        if not overrides:
            return self
        return Settings.model_validate({**self.flat(), **overrides})


# The groups by field name, in their order.
GROUPS: dict[str, type[_Group]] = {
    name: info.annotation for name, info in Settings.model_fields.items() if isinstance(info.annotation, type)
}


def _flat_names() -> Iterator[tuple[str, tuple[str, str]]]:
    for group, model in GROUPS.items():
        for field, info in model.model_fields.items():
            yield info.alias or field, (group, field)


# flat name -> (group, field), in the groups' order.
FLAT: dict[str, tuple[str, str]] = dict(_flat_names())
assert not set(OLD_NAMES) & set(FLAT) and set(OLD_NAMES.values()) <= set(FLAT), "an old spelling is a name again"
