"""Building one of the project's images on an engine from a context held in memory.

The desktop image, the QEMU image and the VM image layer are all built this way: a tar of
the context with stable metadata (so the builder's layer cache holds), the build's output condensed
into progress lines, and earlier builds' hash tags dropped so their images can be pruned.
"""

from __future__ import annotations

import contextlib
import io
import tarfile
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

import docker
import docker.errors

from pytest_osworld.guest.progress import LineCondenser

# Every image the project builds carries the hash of its whole build context: equal hashes, equal images.
BUILD_HASH_LABEL = "io.pytest-osworld.build-hash"

# A step such as the LibreOffice profile warm-up is silent for a while; the engine's answer
# stream must not time out meanwhile.
BUILD_HTTP_TIMEOUT_S = 3600


@dataclass(frozen=True)
class ContextFile:
    name: str  # path inside the build context
    data: bytes
    executable: bool = False


def context_tar(files: Iterable[ContextFile]) -> io.BytesIO:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for item in files:
            info = tarfile.TarInfo(item.name)
            info.size = len(item.data)
            info.mode = 0o755 if item.executable else 0o644
            info.mtime = 0  # stable metadata keeps the builder's layer cache valid
            tar.addfile(info, io.BytesIO(item.data))
    buffer.seek(0)
    return buffer


def run_build(
    client: docker.DockerClient,
    files: Iterable[ContextFile],
    *,
    tag: str,
    buildargs: Mapping[str, str],
    labels: Mapping[str, str],
    what: str,
    error: Callable[[str], Exception],
    progress: Callable[[str], None],
    nocache: bool = False,
) -> str:
    """Build ``tag`` and return the image id; a failed step raises ``error`` with the build's last output.

    The engine refusing the build (``docker.errors.APIError``) is left to the caller.
    """
    condenser = LineCondenser(progress, prefix="    ")
    image_id: str | None = None
    step = "the start"
    stream = client.api.build(
        fileobj=context_tar(files),
        custom_context=True,
        tag=tag,
        buildargs=dict(buildargs),
        labels=dict(labels),
        rm=True,
        forcerm=True,
        pull=False,
        nocache=nocache,
        decode=True,
        timeout=BUILD_HTTP_TIMEOUT_S,
    )
    for chunk in stream:
        if "error" in chunk:
            condenser.flush()
            detail = chunk.get("errorDetail", {}).get("message") or chunk["error"]
            raise error(f"the {what} build failed at {step}: {detail.strip()}\nlast output:\n{condenser.tail_text()}")
        if isinstance(chunk.get("aux"), dict) and "ID" in chunk["aux"]:
            image_id = chunk["aux"]["ID"]
        for line in str(chunk.get("stream", "")).splitlines():
            if line.startswith("Step "):
                step = line.split(" :", 1)[0]
                condenser.feed(line[:160], important=True)
            elif "Using cache" in line:
                condenser.feed("  (cached)", important=True)
            else:
                condenser.feed(line[:160])
    condenser.flush()
    if image_id is None:
        raise error(f"the engine gave no image id for {tag}; last output:\n{condenser.tail_text()}")
    return image_id


def untag_stale(client: docker.DockerClient, repository: str, keep: Collection[str]) -> None:
    """Drop the tags of ``repository`` other than ``keep`` (earlier builds' hashes) so old images can be pruned."""
    for image in client.images.list(name=repository):
        for tag in image.tags:
            # An image also carries its tags of other repositories (the same id tagged elsewhere): not ours.
            if tag.rpartition(":")[0] == repository and tag not in keep:
                # A running container still using the old image keeps it; nothing to do then.
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(tag, noprune=False)
