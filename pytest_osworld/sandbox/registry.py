"""Sandbox providers by name (``--osworld-sandbox NAME``): the built-in ones, the profiles of the
settings, and third parties' entry points.

- ``desktop``: the project's desktop image in a container (built when missing);
- ``osworld-vm``: OSWorld's own VM image (``happysixd/osworld-docker`` over ``Ubuntu.qcow2``);
- ``vm``: the project's QEMU VM with snapshot reset (``pytest_osworld.vm``);
- ``ray``: sandboxes of any of these on a Ray cluster's nodes (``sandbox/ray``, docs/scaling.md);
- a name of a third-party provider, declared in the entry point group ``pytest_osworld.sandboxes``::

      [project.entry-points."pytest_osworld.sandboxes"]
      pods = "my_package.pods:PodProvider"

  The value is a :class:`SandboxProvider` subclass; ``sandbox_profiles.<name>`` in the settings is
  where it finds a configuration of its own. A built-in name cannot be taken over;
- any other name defined under ``sandbox_profiles``: a container of that profile.

Built-ins are loaded by their "module:attribute" string, so a provider's imports (the QEMU
layer's, a plugin's) are only paid for when it is chosen.
"""

from __future__ import annotations

import importlib
import logging
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any

from pytest_osworld.entry_points import declared, distribution
from pytest_osworld.sandbox.base import Progress, SandboxConfigError, SandboxProvider
from pytest_osworld.sandbox.hosts import host_pool
from pytest_osworld.sandbox.leftovers import Managed, find_leftovers, sweep_pool

if TYPE_CHECKING:
    # Annotations only: the settings module imports this package (for its size type).
    from pytest_osworld.sandbox.labels import Owner
    from pytest_osworld.settings import Settings

GROUP = "pytest_osworld.sandboxes"
BUILTIN = {
    "desktop": "pytest_osworld.sandbox.providers.desktop:DesktopProvider",
    "osworld-vm": "pytest_osworld.sandbox.providers.osworld_vm:OsworldVmProvider",
    "vm": "pytest_osworld.vm.provider:VmProvider",
    "ray": "pytest_osworld.sandbox.ray.provider:RayProvider",
}
# A profile of the settings' own (``sandbox_profiles``): a container of any image.
CONTAINER = "pytest_osworld.sandbox.providers.container:ContainerProvider"

logger = logging.getLogger("pytest_osworld.sandbox")


def _plugin_entry_points() -> dict[str, EntryPoint]:
    return declared(GROUP, BUILTIN, "sandbox", logger)


def sandbox_names(settings: Settings) -> list[str]:
    """Every sandbox name these settings can use: built-in, installed plugins', the settings' profiles."""
    return sorted({*BUILTIN, *_plugin_entry_points(), *settings.sandbox.profiles})


def unknown_sandbox(name: str, settings: Settings) -> SandboxConfigError:
    """The error for a sandbox name nothing defines: the known names, and how to define one."""
    return SandboxConfigError(
        f"sandbox profile {name!r} is not defined (known: {', '.join(sandbox_names(settings))}); "
        f"define it under sandbox_profiles in the YAML profile, or pick a known one with --osworld-sandbox"
    )


def provider_class(name: str, settings: Settings) -> type[SandboxProvider]:
    """The provider class of sandbox ``name``. Raises :class:`SandboxConfigError`."""
    if name in BUILTIN:
        return _checked(name, _load(BUILTIN[name]), BUILTIN[name])
    ep = _plugin_entry_points().get(name)
    if ep is not None:
        try:
            value = ep.load()
        except Exception as exc:  # an import error of someone else's package: name it, do not crash the session
            raise SandboxConfigError(
                f"sandbox {name!r} from {distribution(ep)} cannot be loaded ({ep.value}): {type(exc).__name__}: {exc}"
            ) from exc
        return _checked(name, value, f"{distribution(ep)} ({ep.value})")
    if name in settings.sandbox.profiles:
        return _checked(name, _load(CONTAINER), CONTAINER)
    raise unknown_sandbox(name, settings)


def _load(spec: str) -> Any:
    module, _, attribute = spec.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _checked(name: str, value: Any, origin: str) -> type[SandboxProvider]:
    if not (isinstance(value, type) and issubclass(value, SandboxProvider)):
        raise SandboxConfigError(f"sandbox {name!r} from {origin} is not a SandboxProvider subclass")
    return value


def make_provider(settings: Settings, owner: Owner, *, progress: Progress | None = None) -> SandboxProvider:
    """The provider of this process: its worker's host, the selected sandbox. Connects to the engine.

    With ``warm_pool``, a provider that keeps no pool of its own is put behind one of this process
    (``sandbox.pooled``). Raises :class:`SandboxConfigError` when the sandbox is unknown or invalid, or
    the engine does not answer.
    """
    cls = provider_class(settings.sandbox.name, settings)
    provider = cls.from_settings(settings, owner, progress=progress)
    if settings.sandbox.warm_pool and not cls.pools_itself:
        from pytest_osworld.sandbox.pooled import PooledProvider

        return PooledProvider(provider, settings.sandbox.warm_pool, sandbox=settings.sandbox.name, progress=progress)
    return provider


def check_pool(settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
    """The check before a session, on every host; raises :class:`SandboxConfigError` with every problem."""
    provider_class(settings.sandbox.name, settings).check(settings, owner, progress=progress)


def describe_pool(settings: Settings, owner: Owner) -> dict[str, Any]:
    """The run manifest's ``sandbox`` entry, without starting a sandbox."""
    return provider_class(settings.sandbox.name, settings).describe_pool(settings, owner)


def end_run(settings: Settings, owner: Owner) -> int:
    """The run's end, in the process that owns it: what the run left, removed wherever it ran (the
    provider's own end, else the run's containers on every environment host, services left to their
    owner). Returns how many; never raises for an engine that does not answer."""
    removed = provider_class(settings.sandbox.name, settings).end_run(settings, owner)
    if removed is None:
        removed = sweep_pool(host_pool(settings), owner.run_id, services=False)
    return removed


def run_leftovers(settings: Settings, owner: Owner) -> list[Managed]:
    """What ended runs (other than this one) left where the sandboxes of these settings run."""
    found = provider_class(settings.sandbox.name, settings).run_leftovers(settings, owner)
    if found is None:
        found = find_leftovers(host_pool(settings), max_age=settings.sandbox.leftover_age, other_than=owner.run_id)
    return found
