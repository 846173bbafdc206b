"""``BaseTask`` and ``MultiPhaseTask``: a task is a dict of its fields, read as keys or attributes."""

from __future__ import annotations

import copy
from typing import Any

from pytest_osworld.v2.reading.task_file import TASK_FIELDS

# BaseTask's fields and their defaults: the static reader's table, so a collected task and a loaded
# one agree on every default (the class attributes below repeat them for task code that reads them).
FIELDS = TASK_FIELDS


class BaseTask(dict[str, Any]):
    """One task: its fields (deep copies of the class's) as dict keys, each also an attribute.

    ``setup(setup_controller)`` runs the ``config`` steps unless a task overrides it; ``evaluate(env)``
    returns a score in [0, 1] or a dict holding one under ``score``. ``solution`` (a project key, not a
    field) is the reference solution the oracle runner plays.
    """

    id: Any = ""
    snapshot: Any = ""
    instruction: Any = ""
    source: Any = ""
    config: Any = []  # noqa: RUF012 - a default the instance deep-copies
    trajectory: Any = ""
    related_apps: Any = []  # noqa: RUF012 - a default the instance deep-copies
    evaluator: Any = None
    proxy: Any = False
    image: Any = None
    instance_type: Any = None
    volume_size: Any = None
    platform: Any = "linux"
    user_simulator: Any = None
    disable_vnc: Any = False
    disable_recording: Any = False
    intermediate_eval_safe: Any = True
    solution: Any = None

    def __init__(self, **overrides: Any) -> None:
        cls = type(self)
        super().__init__({name: copy.deepcopy(getattr(cls, name)) for name in FIELDS})
        self.update(overrides)

    def __getattribute__(self, name: str) -> Any:
        # A field reads the dict, so task["instruction"] = ... and task.instruction agree.
        if name in FIELDS and dict.__contains__(self, name):
            return dict.__getitem__(self, name)
        return super().__getattribute__(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in FIELDS:
            self[name] = value
        else:
            super().__setattr__(name, value)

    def setup(self, setup_controller: Any, use_proxy: bool = False) -> None:
        """Prepare the guest: by default, the ``config`` steps."""
        setup_controller.setup(self["config"], use_proxy)

    def evaluate(self, env: Any) -> float | dict[str, Any]:
        """The task's score; a task class always overrides it (an ``evaluator`` dict is not run here)."""
        raise NotImplementedError(f"task {self['id']!r} defines no evaluate(env)")


class MultiPhaseTask(BaseTask):
    """A task run in phases, one instruction each (``get_phases()``): a phase dict holds ``instruction``
    and optionally ``gate`` (stop unless its score reaches ``gate_min_score``, default 1.0), ``evaluate``
    (a callable ``(env) -> score`` for the gate, else the task's ``evaluate``), ``setup`` (a callable
    ``(setup_controller)`` run before the phase) and ``solution`` (the oracle's actions of the phase)."""

    def get_phases(self) -> list[dict[str, Any]]:
        return [{"instruction": self["instruction"]}]
