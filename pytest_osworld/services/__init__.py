"""Shared services: containers (a website, a code forge, a proxy) that tasks declare by name.

- the model and the profile's ``services:`` key (``model``), the built-in definitions (``builtin``),
  the packaged presets a run may take (``profiles``: OSWorld-V2's GitLab and mock websites);
- a run's services on one engine: started once, attached to by the other workers, health-checked,
  held in turn when exclusive (``pool``), with a fair lock across processes (``pytest_osworld.locks``).

The pytest side (fixtures, the skip of undefined services, removal at the run's end) is
``pytest_osworld.plugin.services``. Importing this package gives the settings their service registry
(``Registry``): the settings check ``service_presets``, ``services`` and ``service_host_suffix`` against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_osworld.services.builtin import BUILTIN
from pytest_osworld.services.declaration import Service, ServiceConfigError, check_suffix, merge
from pytest_osworld.services.presets import check_entries, check_name, with_presets
from pytest_osworld.settings import use_service_registry

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings
    from pytest_osworld.tasks.model import Task


class Registry:
    """The settings' checks of the services' keys (``settings.ServiceRegistry``) over the built-in
    services and the packaged presets."""

    def check_preset(self, name: str) -> str:
        return check_name(name)

    def check_entries(self, entries: Mapping[str, Any], presets: list[str]) -> None:
        try:
            check_entries(BUILTIN, entries, presets)
        except ServiceConfigError as exc:
            # The error's label already says "services": each problem goes on as <service>.<key>: ...
            problems = [line.strip().removeprefix("services.") for line in str(exc).splitlines()]
            raise ValueError("; ".join(problems)) from None

    def check_suffix(self, value: str) -> str:
        return check_suffix(value)


use_service_registry(Registry())


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


__all__ = ["BUILTIN", "Registry", "Service", "ServiceConfigError", "defined", "merge", "required", "undefined_reason"]
