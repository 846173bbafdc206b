"""Shared services: containers (a website, a code forge, a proxy) that tasks declare by name.

- the model and the profile's ``services:`` key (``model``), the built-in definitions (``builtin``),
  the packaged presets a run may take (``profiles``: OSWorld-V2's GitLab and mock websites);
- a run's services on one engine: started once, attached to by the other workers, health-checked,
  held in turn when exclusive (``pool``), with a fair lock across processes (``lock``).

The pytest side (fixtures, the skip of undefined services, removal at the run's end) is
``pytest_osworld.plugin.services``. Nothing here imports the settings module at run time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_osworld.services.builtin import BUILTIN
from pytest_osworld.services.model import Service, ServiceConfigError, merge
from pytest_osworld.services.profiles import with_presets

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings
    from pytest_osworld.tasks.model import Task


def defined(settings: Settings) -> dict[str, Service]:
    """The services of this run: the built-in ones, the presets' declarations, the profile's ``services:``."""
    return merge(with_presets(BUILTIN, settings.services.presets), settings.services.declared)


def required(task: Task, services: dict[str, Service], *, proxy: bool = False) -> list[str]:
    """The services a task must have here: its ``services``, and ``proxy`` for OSWorld's ``proxy: true``
    when the run enables the proxy (``proxy``, OSWorld's ``enable_proxy``) and defines one. Otherwise such
    a task runs on the sandbox's own network, as OSWorld runs it without ``enable_proxy`` (its proxy is an
    option of the run, not a need of the task)."""
    names = list(task.services)
    if task.proxy and proxy and "proxy" in services:
        names.append("proxy")
    return list(dict.fromkeys(names))


def undefined_reason(needed: list[str], services: dict[str, Service]) -> str | None:
    """Why a task that needs ``needed`` cannot run here (a service no definition names), or None."""
    missing = [name for name in needed if name not in services]
    if not missing:
        return None
    names = ", ".join(repr(n) for n in missing)
    return (
        f"needs the shared service {names}, which is not defined here (defined: {', '.join(sorted(services))}); "
        "declare it under services: in the YAML profile (docs/services.md)"
    )


__all__ = ["BUILTIN", "Service", "ServiceConfigError", "defined", "merge", "required", "undefined_reason"]
