"""The ``desktop`` sandbox: the project's own desktop image in a container, built when missing.

The image is built on the environment host's engine from the build context in ``guest/`` (a few
minutes the first time, then found current by the hash of that context), by one process per
engine while the others wait. With ``sandbox_profiles.desktop.image`` set, that image is used as
it is, like any profile's.
"""

from __future__ import annotations

import docker

from pytest_osworld.guest import build
from pytest_osworld.sandbox.base import Progress, SandboxConfigError
from pytest_osworld.sandbox.desktop_image import ensure_desktop_image
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.profiles import ContainerProfile
from pytest_osworld.sandbox.providers.container import ContainerProvider
from pytest_osworld.sandbox.provides import REBUILD, Provides, from_manifest, unknown


def desktop_image_provides(
    sandbox: str, client: docker.DockerClient, host: EngineHost, *, build_first: bool, progress: Progress
) -> Provides:
    """What the current desktop image provides (its manifest); unknown when it is missing or stale,
    unless ``build_first`` (the user asked) builds it."""
    info = build.image_info(client)
    current = info is not None and info.build_hash == build.context_hash()
    if not current and build_first:
        ensure_desktop_image(client, host, progress)
        info = build.image_info(client)
        current = info is not None
    if info is None or not current:
        state = "is not built" if info is None else "is stale (its build context changed)"
        return unknown(
            sandbox,
            f"image {build.LATEST} on {host.display}",
            f"the desktop image {state} on {host.display}; {REBUILD} (or pass --build-image)",
        )
    return from_manifest(sandbox, info.manifest, f"image {info.reference} on {host.display}")


def _builds(profile: ContainerProfile) -> bool:
    """Whether the profile runs the project's image (no image of the user's own instead)."""
    return profile.build == "desktop"


class DesktopProvider(ContainerProvider):
    """Starts containers of the project's desktop image, building it first when needed."""

    @classmethod
    def _image_problems(
        cls, client: docker.DockerClient, host: EngineHost, profile: ContainerProfile, say: Progress
    ) -> list[str]:
        if not _builds(profile):
            return super()._image_problems(client, host, profile, say)
        try:
            ensure_desktop_image(client, host, say)
        except SandboxConfigError as exc:
            return [str(exc)]
        return []

    @classmethod
    def _image_provides(
        cls, client: docker.DockerClient, host: EngineHost, profile: ContainerProfile, build_first: bool, say: Progress
    ) -> Provides:
        if not _builds(profile):
            return super()._image_provides(client, host, profile, build_first, say)
        try:
            return desktop_image_provides(profile.name, client, host, build_first=build_first, progress=say)
        except SandboxConfigError as exc:
            return unknown(profile.name, f"image {build.LATEST}", str(exc))

    def _ensure_image(self) -> str:
        if not _builds(self.profile):
            return super()._ensure_image()
        return ensure_desktop_image(self.client, self.host, self._progress)
