"""The QEMU image ``pytest-osworld/qemu``: Debian's QEMU on the project's debootstrap base; each VM
sandbox is one container of it (a QEMU container; a runner is an agent, ``pytest_osworld.agents``).

Built like the desktop image (no registry): the build context (``qemu/``) and the base spec are
hashed, the image carries the hash in a label, and it is rebuilt only when the hash changes. The
context's files are hashed by name and content, not by the folder they are in.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable
from pathlib import Path

import docker
import docker.errors

from pytest_osworld.guest import rootfs
from pytest_osworld.guest.docker_build import BUILD_HASH_LABEL, ContextFile, run_build, untag_stale
from pytest_osworld.locks import file_lock
from pytest_osworld.vm.errors import VmBuildError

REPOSITORY = "pytest-osworld/qemu"
LATEST = f"{REPOSITORY}:latest"
# qemu/Dockerfile's first comment still says "QEMU runner" and "vm.runner_image" (the names before the
# QEMU side was renamed): editing it changes the hash, so every machine would rebuild the image and lose
# its saved VM states (their key holds the image's id). Reword it with the next real change to the image.
CONTEXT_DIR = Path(__file__).resolve().parent / "qemu"
_GUEST_ETC = Path(__file__).resolve().parent.parent / "guest" / "image" / "etc"
# Lean apt settings shared with the desktop image: (path in the context, source file).
_SHARED = (
    ("apt.conf", _GUEST_ETC / "apt" / "90pytest-osworld"),
    ("dpkg.cfg", _GUEST_ETC / "dpkg" / "90pytest-osworld-nodoc"),
)
_EXECUTABLE = {"vm-run", "probe-init"}

Progress = Callable[[str], None]


def _context() -> list[tuple[str, bytes]]:
    files = [(p.name, p.read_bytes()) for p in sorted(CONTEXT_DIR.iterdir()) if p.is_file()]
    files += [(name, path.read_bytes()) for name, path in _SHARED]
    return files


def context_hash() -> str:
    digest = hashlib.sha256(f"base {rootfs.default_spec().digest()}\n".encode())
    for name, data in _context():
        digest.update(f"{name} {len(data)}\n".encode() + data)
    return digest.hexdigest()


def current_image(client: docker.DockerClient) -> str | None:
    """The id of the QEMU image when it is present and current, else None."""
    with contextlib.suppress(docker.errors.ImageNotFound):
        image = client.images.get(f"{REPOSITORY}:{context_hash()[:12]}")
        labels = image.attrs.get("Config", {}).get("Labels") or {}
        if labels.get(BUILD_HASH_LABEL) == context_hash():
            return str(image.id)
    return None


def ensure_qemu_image(client: docker.DockerClient, progress: Progress | None = None) -> str:
    """The QEMU image's id, built first when missing or stale (one builder per machine at a time)."""
    say = progress or (lambda line: None)
    found = current_image(client)
    if found:
        return found
    with file_lock("qemu-image-build", lambda: say("another process is building the QEMU image; waiting")):
        found = current_image(client)
        if found:
            return found
        return _build(client, say)


def _build(client: docker.DockerClient, say: Progress) -> str:
    wanted = context_hash()
    tag = f"{REPOSITORY}:{wanted[:12]}"
    try:
        base = rootfs.ensure_base(client, rootfs.default_spec(), say)
    except docker.errors.DockerException as exc:
        raise VmBuildError(f"the base image for {tag} could not be made: {exc}") from None
    say(f"building {tag} on {base}")
    files = [ContextFile(name, data, name in _EXECUTABLE) for name, data in _context()]
    try:
        image_id = run_build(
            client,
            files,
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            labels={BUILD_HASH_LABEL: wanted},
            what="QEMU image",
            error=VmBuildError,
            progress=say,
        )
    except docker.errors.APIError as exc:
        raise VmBuildError(f"the Docker engine refused the QEMU image build: {exc.explanation or exc}") from None
    client.api.tag(image_id, REPOSITORY, "latest")
    untag_stale(client, REPOSITORY, keep=(tag, LATEST))  # a running VM keeps its image
    say(f"built {tag}")
    return str(image_id)
