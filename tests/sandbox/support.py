"""Helpers of the sandbox tests: the engine, the images they run, what they leave behind."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import docker
import docker.errors

from pytest_osworld.locks import file_lock
from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID

STAND_IN_DIR = Path(__file__).parent / "stand_in"
STAND_IN_REPOSITORY = "pytest-osworld/sandbox-stand-in"


def base_image(client: docker.DockerClient) -> str:
    """The project's base rootfs image (made by debootstrap when it is not there yet)."""
    from pytest_osworld.guest import rootfs

    spec = rootfs.default_spec()
    with file_lock("base-image"):
        return rootfs.ensure_base(client, spec, lambda line: None)


def stand_in_image(client: docker.DockerClient) -> str:
    """A small image answering GET /screenshot on port 5000: the container machinery's test subject."""
    base = base_image(client)
    digest = hashlib.sha256(base.encode())
    for path in sorted(STAND_IN_DIR.iterdir()):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    tag = f"{STAND_IN_REPOSITORY}:{digest.hexdigest()[:12]}"
    with file_lock("stand-in-image"):
        try:
            client.images.get(tag)
            return tag
        except docker.errors.ImageNotFound:
            pass
        context = io.BytesIO()
        with tarfile.open(fileobj=context, mode="w") as tar:
            for path in sorted(STAND_IN_DIR.iterdir()):
                tar.add(path, arcname=path.name)
        context.seek(0)
        client.images.build(
            fileobj=context, custom_context=True, tag=tag, buildargs={"BASE_IMAGE": base}, pull=False, rm=True
        )
    return tag


def run_containers(client: docker.DockerClient, run_id: str) -> list[str]:
    """Names of the containers (running or not) labelled with a run id."""
    found = client.containers.list(
        all=True, filters={"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]}, sparse=True
    )
    return [str((c.attrs.get("Names") or [c.id])[0]).lstrip("/") for c in found]


def remove_run(client: docker.DockerClient, run_id: str) -> None:
    for container in client.containers.list(
        all=True, filters={"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]}
    ):
        container.remove(force=True, v=True)
