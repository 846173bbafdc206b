"""``desktop_env.task_base`` as task files import it: re-exported from :mod:`pytest_osworld.v2.api.task_base`."""

from __future__ import annotations

from pytest_osworld.v2.api.task_base import FIELDS, BaseTask, MultiPhaseTask

__all__ = ["FIELDS", "BaseTask", "MultiPhaseTask"]
