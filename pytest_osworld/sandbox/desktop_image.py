"""The project's desktop image on an engine, built when missing or stale: what the ``desktop`` provider
and a service declared ``build: desktop`` (``services/pool.py``) both run."""

from __future__ import annotations

import docker

from pytest_osworld.errors import OsworldError
from pytest_osworld.guest import build
from pytest_osworld.locks import engine_lock
from pytest_osworld.sandbox.base import Progress, SandboxConfigError
from pytest_osworld.sandbox.hosts import EngineHost


def ensure_desktop_image(client: docker.DockerClient, host: EngineHost, progress: Progress) -> str:
    """The id of the current desktop image on this engine, built first when missing or stale."""
    try:
        # One process per engine checks and builds while the other workers wait, then find it current.
        with engine_lock(host.display, "desktop-image"):
            info = build.ensure_image(client, progress=progress)
    except OsworldError as exc:
        raise SandboxConfigError(f"the desktop image is not available on {host.display}: {exc}") from None
    return info.id
