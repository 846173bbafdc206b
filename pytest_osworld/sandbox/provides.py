"""What a sandbox provides (OSWorld apps, commands on PATH), from an image manifest: read or declared.

The project's desktop image records both at build time (``guest/image/bin/image-manifest``: each
application's ``serves``, and ``commands``, the executables on PATH) in its manifest label. OSWorld's
own VM image cannot be read without booting it: it has a declared manifest of the same shape in
``sandbox/manifests/``. A manifest without those keys (an image built before they existed) is
unknown, never guessed: the answer says how to get a current one.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_osworld.tasks.needs import Need, normalize_app

MANIFESTS_DIR = Path(__file__).resolve().parent / "manifests"
REBUILD = "rebuild the image: pytest-osworld image build"


@dataclass(frozen=True)
class Provides:
    """What one sandbox has; ``problem`` set (and no apps or commands) when it is not known."""

    sandbox: str
    source: str  # where the answer comes from: an image and its id, or a declared file
    apps: frozenset[str] = frozenset()
    # None: not checked (a profile declares its apps, and its image's manifest cannot be read).
    commands: frozenset[str] | None = frozenset()
    problem: str | None = None  # why it is unknown, with the fix

    @property
    def known(self) -> bool:
        return self.problem is None

    def has(self, need: Need) -> bool:
        if need.kind == "app":
            return need.name in self.apps
        return self.commands is None or need.name in self.commands

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.sandbox,
            "source": self.source,
            "known": self.known,
            "problem": self.problem,
            "apps": sorted(self.apps),
            "commands": len(self.commands) if self.commands is not None else None,
        }


def unknown(sandbox: str, source: str, problem: str) -> Provides:
    return Provides(sandbox, source, problem=problem)


def from_manifest(sandbox: str, manifest: Mapping[str, Any] | None, source: str, *, fix: str = REBUILD) -> Provides:
    """What a manifest says the image provides; unknown (with ``fix``) when it lacks ``serves``/``commands``."""
    if manifest is None:
        return unknown(sandbox, source, f"{source} carries no image manifest; {fix}")
    applications = manifest.get("applications")
    commands = manifest.get("commands")
    if not isinstance(applications, Mapping) or not isinstance(commands, list):
        return unknown(sandbox, source, f"{source} was built before manifests listed apps and commands; {fix}")
    apps: set[str] = set()
    for name, app in applications.items():
        serves = app.get("serves") if isinstance(app, Mapping) else None
        if not isinstance(serves, list):
            return unknown(sandbox, source, f"{source}: application {name!r} has no 'serves' list; {fix}")
        apps.update(str(s) for s in serves)
    return Provides(sandbox, source, frozenset(apps), frozenset(str(c) for c in commands))


def declared(sandbox: str, file_name: str) -> Provides:
    """A declared manifest under ``sandbox/manifests/`` (an image the project cannot read)."""
    path = MANIFESTS_DIR / file_name
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return unknown(sandbox, str(path), f"the declared manifest {path} cannot be read: {exc}")
    if not isinstance(manifest, dict):
        return unknown(sandbox, str(path), f"the declared manifest {path} is not a JSON object")
    return from_manifest(
        sandbox, manifest, f"declared manifest {path.name}", fix=f"fix {path}: see docs/desktop-image.md"
    )


def with_declared_apps(found: Provides, apps: Iterable[str], where: str) -> Provides:
    """``found`` with the apps a profile declares (``where``: ``sandbox_profiles.NAME.apps``) in place of
    its manifest's. The commands stay the manifest's; when the manifest cannot be read the declared apps
    are the whole (known) answer and commands are not checked."""
    declared_apps = frozenset(normalize_app(app) for app in apps)
    if found.known:
        return replace(found, apps=declared_apps, source=f"{found.source}; apps declared by {where}")
    return Provides(
        found.sandbox,
        f"apps declared by {where}; commands not checked ({found.problem})",
        declared_apps,
        commands=None,
    )
