"""Building the desktop image ``pytest-osworld/desktop`` through the Docker SDK.

The image is made in two stages: a base rootfs from debootstrap (``rootfs``), cached under a
hash of its own inputs, then the layers of ``image/Dockerfile`` built on it with the classic
builder. The final image carries the hash of its whole build context (Dockerfile, files, guest
server sources, the services' servers, the host's CA bundle, the base spec) in the label ``io.pytest-osworld.build-hash``;
``ensure_image`` builds only when that label differs from ``context_hash()``.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tarfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from pytest_osworld.guest import rootfs
from pytest_osworld.guest.docker_build import BUILD_HASH_LABEL, ContextFile, run_build, untag_stale
from pytest_osworld.guest.errors import DockerUnavailableError, ImageBuildError
from pytest_osworld.locks import file_lock
from pytest_osworld.servers import IMAGE_PACKAGE

IMAGE_REPOSITORY = "pytest-osworld/desktop"
LATEST = f"{IMAGE_REPOSITORY}:latest"
# The image's manifest (JSON): the versions of its applications, read off the image at build time.
MANIFEST_LABEL = "io.pytest-osworld.image-manifest"
MANIFEST_PATH = "/etc/pytest-osworld/image.json"

PACKAGE_DIR = Path(__file__).resolve().parent
IMAGE_DIR = PACKAGE_DIR / "image"
SERVER_DIR = PACKAGE_DIR / "server"
SERVER_ARCHIVE_DIR = "guest_server"  # where the Dockerfile expects the guest server sources
# The servers that service containers of this image run (python3 -m osworld_servers.<name>).
SERVICE_SERVERS_DIR = PACKAGE_DIR.parent / "servers"
CA_ARCHIVE_NAME = "ca-certificates.crt"
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
CA_BUNDLE_ENV = "PYTEST_OSWORLD_CA_BUNDLE"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ImageInfo:
    """What the engine holds for ``pytest-osworld/desktop:latest``."""

    id: str
    size: int  # bytes, as the engine reports it (all layers)
    build_hash: str | None
    tags: tuple[str, ...]
    manifest: dict[str, Any] | None = None  # None for an image built before manifests existed

    @property
    def applications(self) -> dict[str, str]:
        """Application name -> the version installed in the image (``chromium`` -> ``120.0...``)."""
        apps = (self.manifest or {}).get("applications") or {}
        return {name: str(app.get("version")) for name, app in sorted(apps.items()) if isinstance(app, dict)}

    @property
    def serves(self) -> dict[str, list[str]] | None:
        """Application name -> the OSWorld app names it serves; None for an image built before ``serves``."""
        apps = (self.manifest or {}).get("applications") or {}
        found = {name: app.get("serves") for name, app in sorted(apps.items()) if isinstance(app, dict)}
        if not found or not all(isinstance(v, list) for v in found.values()):
            return None
        return {name: [str(s) for s in serves] for name, serves in found.items() if isinstance(serves, list)}

    @property
    def commands(self) -> list[str] | None:
        """The executables on the image's PATH; None for an image built before the manifest listed them."""
        found = (self.manifest or {}).get("commands")
        return [str(c) for c in found] if isinstance(found, list) else None

    @property
    def reference(self) -> str:
        """The most precise tag: the build-hash one when present."""
        hashed = [tag for tag in self.tags if not tag.endswith(":latest")]
        return hashed[0] if hashed else (self.tags[0] if self.tags else self.id)


def connect() -> docker.DockerClient:
    """A client of the engine at DOCKER_HOST (or the local socket), or a clear error."""
    try:
        client = docker.from_env()
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise DockerUnavailableError(_no_engine_message(exc)) from None
    return client


def context_hash() -> str:
    """SHA-256 of everything the image is built from; equal hashes mean equal images."""
    digest = hashlib.sha256()
    digest.update(f"base {rootfs.default_spec().digest()}\n".encode())
    for item in _context_files():
        digest.update(f"{item.name} {int(item.executable)} {len(item.data)}\n".encode())
        digest.update(item.data)
    return digest.hexdigest()


def image_info(client: docker.DockerClient) -> ImageInfo | None:
    """The built desktop image, or None when there is none yet."""
    with _engine_errors():
        try:
            image = client.images.get(LATEST)
        except docker.errors.ImageNotFound:
            return None
    labels = image.attrs.get("Config", {}).get("Labels") or {}
    return ImageInfo(
        id=image.id,
        size=int(image.attrs.get("Size", 0)),
        build_hash=labels.get(BUILD_HASH_LABEL),
        tags=tuple(sorted(image.tags)),
        manifest=parse_manifest(labels.get(MANIFEST_LABEL)),
    )


def parse_manifest(text: str | None) -> dict[str, Any] | None:
    """The image manifest a label holds; None when there is none or it is not a JSON object."""
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def ensure_image(client: docker.DockerClient, progress: Progress | None = None) -> ImageInfo:
    """The current desktop image, built first when missing or stale.

    Safe to call from several processes at once (pytest-xdist workers): a file lock makes one of
    them build while the others wait, then find the image current.
    """
    say = progress or _quiet
    wanted = context_hash()
    info = image_info(client)
    if info is not None and info.build_hash == wanted:
        return info
    with _build_lock(say):
        info = image_info(client)
        if info is not None and info.build_hash == wanted:
            return info
        return _build(client, wanted, force=False, progress=say)


def build_image(client: docker.DockerClient, force: bool = False, progress: Progress | None = None) -> ImageInfo:
    """Build the desktop image; ``force`` rebuilds every layer (fresh packages), not the base."""
    say = progress or _quiet
    wanted = context_hash()
    with _build_lock(say):
        return _build(client, wanted, force=force, progress=say)


def _build(client: docker.DockerClient, wanted: str, *, force: bool, progress: Progress) -> ImageInfo:
    started = time.monotonic()
    spec = rootfs.default_spec()
    with _engine_errors():
        base = rootfs.ensure_base(client, spec, progress)
        hashed_tag = f"{IMAGE_REPOSITORY}:{wanted[:12]}"
        progress(f"building {hashed_tag} on {base}")
        built = _run_docker_build(client, base, spec, wanted, hashed_tag, force, progress)
        image_id = _label_manifest(client, built, hashed_tag, progress)
        client.api.tag(image_id, IMAGE_REPOSITORY, "latest")
        untag_stale(client, IMAGE_REPOSITORY, keep=(hashed_tag, LATEST))
    info = image_info(client)
    if info is None or info.build_hash != wanted:
        raise ImageBuildError(f"the build finished but {LATEST} does not carry hash {wanted[:12]}")
    progress(f"built {info.reference} ({info.size / 1e9:.2f} GB) in {time.monotonic() - started:.0f} s")
    return info


def _run_docker_build(
    client: docker.DockerClient,
    base: str,
    spec: rootfs.BaseSpec,
    wanted: str,
    tag: str,
    force: bool,
    progress: Progress,
) -> str:
    return run_build(
        client,
        _context_files(),
        tag=tag,
        buildargs={"BASE_IMAGE": base},
        labels={BUILD_HASH_LABEL: wanted, rootfs.BASE_HASH_LABEL: spec.digest()},
        what="desktop image",
        error=ImageBuildError,
        progress=progress,
        nocache=force,
    )


def _label_manifest(client: docker.DockerClient, image_id: str, tag: str, progress: Progress) -> str:
    """Give the built image its manifest as a label (a layer of no files): read without a container."""
    raw = _read_image_file(client, image_id, MANIFEST_PATH)
    manifest = parse_manifest(raw.decode("utf-8", "replace"))
    if manifest is None:
        raise ImageBuildError(f"the desktop image's manifest at {MANIFEST_PATH} is not a JSON object: {raw[:200]!r}")
    return run_build(
        client,
        [ContextFile("Dockerfile", b"ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n")],
        tag=tag,
        buildargs={"BASE_IMAGE": image_id},
        labels={MANIFEST_LABEL: json.dumps(manifest, sort_keys=True, separators=(",", ":"))},
        what="desktop image manifest",
        error=ImageBuildError,
        progress=progress,
    )


def _read_image_file(client: docker.DockerClient, image_id: str, path: str) -> bytes:
    """One file of an image, copied out of a container that is created but never started."""
    container = client.containers.create(image_id, command=["true"], entrypoint=[])
    try:
        stream, _ = container.get_archive(path)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.extractfile(tar.getmembers()[0])
            if member is None:
                raise ImageBuildError(f"{path} in the desktop image is not a file")
            return member.read()
    except docker.errors.NotFound:
        raise ImageBuildError(f"the desktop image has no manifest at {path}") from None
    finally:
        container.remove(force=True)


def _context_files() -> list[ContextFile]:
    files: list[ContextFile] = []
    for path in sorted(IMAGE_DIR.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files.append(_read(path, path.relative_to(IMAGE_DIR).as_posix()))
    for path in sorted(SERVER_DIR.glob("*.py")):
        files.append(_read(path, f"{SERVER_ARCHIVE_DIR}/{path.name}"))
    for path in sorted(SERVICE_SERVERS_DIR.rglob("*.py")):
        if "__pycache__" not in path.parts:
            files.append(_read(path, f"{IMAGE_PACKAGE}/{path.relative_to(SERVICE_SERVERS_DIR).as_posix()}"))
    ca = _ca_bundle()
    files.append(ContextFile(CA_ARCHIVE_NAME, ca.read_bytes(), False))
    return files


def _read(path: Path, name: str) -> ContextFile:
    # Executable by location, not by file mode: an installed wheel may not keep mode bits, and
    # the hash must not depend on how the package was unpacked.
    return ContextFile(name, path.read_bytes(), name.startswith("bin/"))


def _ca_bundle() -> Path:
    override = os.environ.get(CA_BUNDLE_ENV)
    path = Path(override) if override else HOST_CA_BUNDLE
    if not path.is_file():
        raise ImageBuildError(
            f"no CA bundle at {path}; the image build downloads over https and trusts the "
            f"host's CAs (fix: apt-get install ca-certificates, or set {CA_BUNDLE_ENV} to a "
            f"PEM bundle)"
        )
    return path


@contextlib.contextmanager
def _build_lock(progress: Progress) -> Iterator[None]:
    with file_lock(
        "desktop-image-build",
        lambda: progress("another process is building the desktop image; waiting for it"),
    ):
        yield


@contextlib.contextmanager
def _engine_errors() -> Iterator[None]:
    try:
        yield
    except (requests.exceptions.ConnectionError, docker.errors.DockerException) as exc:
        if isinstance(exc, docker.errors.APIError) and exc.response is not None:
            raise ImageBuildError(f"the Docker engine refused: {exc.explanation or exc}") from None
        raise DockerUnavailableError(_no_engine_message(exc)) from None


def _no_engine_message(exc: BaseException) -> str:
    where = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    return (
        f"no Docker engine answers at {where} ({type(exc).__name__}); the desktop image and "
        f"its containers need one (fix: start dockerd, or set DOCKER_HOST)"
    )


def _quiet(_line: str) -> None:
    pass
