"""Service presets: declarations that ship with the package but are not built in.

Each ``profiles/<name>.yaml`` is a profile fragment (a ``services:`` mapping, so the file is a valid
profile by itself too) for a stack a user pulls or builds: a run takes it with
``service_presets: [<name>]`` (or ``--osworld-service-presets <name>``). Its services sit between the
built-in ones and the profile's own ``services:``, which adjust them key by key (docs/services.md).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from pytest_osworld.services.declaration import Service, ServiceConfigError, merge

PRESET_DIR = Path(__file__).parent / "profiles"  # data only: a sub-package would be a package-level circle


def names() -> list[str]:
    """The presets that ship with the package."""
    return sorted(path.stem for path in PRESET_DIR.glob("*.yaml"))


def check_name(name: str) -> str:
    if name not in names():
        raise ValueError(f"{name!r} is not a service preset of this version (presets: {', '.join(names())})")
    return name


@functools.cache
def entries(name: str) -> dict[str, Any]:
    """The ``services:`` mapping of the preset ``name`` (its file read as YAML, once; not to be changed)."""
    path = PRESET_DIR / f"{check_name(name)}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    services = data.get("services") if isinstance(data, dict) else None
    if not isinstance(services, dict):  # a packaging mistake, not a user's
        raise ServiceConfigError(f"service preset {path.name}: expected a services: mapping")
    return services


def with_presets(builtin: Mapping[str, Service], presets: Iterable[str]) -> dict[str, Service]:
    """The built-in services with each preset's declarations applied, in the order given."""
    services = dict(builtin)
    for name in presets:
        try:
            services = merge(services, entries(name))
        except ServiceConfigError as exc:
            raise ServiceConfigError(f"service preset {name}: {exc}") from None
    return services


def check_entries(builtin: Mapping[str, Service], entries_: Mapping[str, Any], presets: Iterable[str]) -> None:
    """Validate a profile's ``services:`` over the built-in services and ``presets``; raises ServiceConfigError,
    with a hint for an entry that adjusts a service of a preset the run does not take."""
    presets = list(presets)
    try:
        merge(with_presets(builtin, presets), entries_)
    except ServiceConfigError as exc:
        hints = [
            f"services.{name}: {name} is declared by the preset {preset}: add service_presets: [{preset}]"
            for name in entries_
            if name not in builtin
            for preset in names()
            if preset not in presets and name in entries(preset)
        ]
        raise ServiceConfigError("\n  ".join([str(exc), *hints])) from None
