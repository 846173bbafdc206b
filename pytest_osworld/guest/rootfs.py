"""The base image: a Debian root filesystem made by debootstrap and imported into Docker.

No container registry is reachable, so there is no ``FROM debian``: the desktop image is layered
on this imported rootfs instead. It is tagged by a hash of its own inputs and made again only when
those inputs change (debootstrap takes minutes; the desktop layers are rebuilt far more often).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

import docker
import docker.errors

from pytest_osworld.guest.errors import DebootstrapMissingError, ImageBuildError
from pytest_osworld.guest.progress import LineCondenser
from pytest_osworld.locks import file_lock

BASE_REPOSITORY = "pytest-osworld/base"
BASE_HASH_LABEL = "io.pytest-osworld.base-hash"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BaseSpec:
    """Everything that decides the content of the base rootfs (and so its tag)."""

    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    variant: str = "minbase"
    architecture: str = "amd64"

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def reference(self) -> str:
        return f"{BASE_REPOSITORY}:{self.digest()[:12]}"


def host_architecture() -> str:
    """Debian's name for this machine's architecture (the rootfs must run natively)."""
    machine = os.uname().machine
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)


def default_spec() -> BaseSpec:
    return BaseSpec(architecture=host_architecture())


def base_exists(client: docker.DockerClient, spec: BaseSpec) -> bool:
    try:
        client.images.get(spec.reference)
    except docker.errors.ImageNotFound:
        return False
    return True


def ensure_base(client: docker.DockerClient, spec: BaseSpec, progress: Progress) -> str:
    """Return the base image reference, making it first when it is not in the engine.

    Processes that call this at once make the rootfs once: the others wait, then find it.
    """
    if base_exists(client, spec):
        progress(f"base image {spec.reference} is present")
        return spec.reference
    with file_lock(
        "base-image-build",
        lambda: progress("another process is making the base rootfs; waiting for it"),
    ):
        if base_exists(client, spec):
            return spec.reference
        _make_base(client, spec, progress)
    return spec.reference


def _make_base(client: docker.DockerClient, spec: BaseSpec, progress: Progress) -> None:
    _check_can_debootstrap()
    work = Path(tempfile.mkdtemp(prefix="pytest-osworld-rootfs-", dir=_scratch_dir()))
    try:
        rootfs = work / "rootfs"
        _debootstrap(spec, rootfs, progress)
        _tidy_rootfs(spec, rootfs)
        progress(f"importing the rootfs as {spec.reference}")
        _import_rootfs(client, spec, rootfs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _scratch_dir() -> str:
    # /var/tmp is on disk (not a small tmpfs) and the rootfs is a few hundred MB.
    return "/var/tmp" if os.path.isdir("/var/tmp") else tempfile.gettempdir()


def _check_can_debootstrap() -> None:
    if shutil.which("debootstrap") is None and not os.path.exists("/usr/sbin/debootstrap"):
        raise DebootstrapMissingError(
            "debootstrap is not installed, and the desktop image's base is made with it "
            "(fix: apt-get install debootstrap)"
        )
    if os.geteuid() != 0:
        raise DebootstrapMissingError(
            "debootstrap needs root to make the base rootfs "
            "(fix: run `sudo pytest-osworld image build` once; later builds reuse the base)"
        )


def _debootstrap(spec: BaseSpec, target: Path, progress: Progress) -> None:
    executable = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    command = [
        executable,
        f"--variant={spec.variant}",
        f"--arch={spec.architecture}",
        spec.suite,
        str(target),
        spec.mirror,
    ]
    progress(f"debootstrap {spec.suite} ({spec.variant}) from {spec.mirror}")
    condenser = LineCondenser(progress, prefix="  debootstrap: ")
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        env={**os.environ, "LC_ALL": "C"},
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            condenser.feed(line.rstrip("\n"))
        returncode = process.wait()
    condenser.flush()
    if returncode != 0:
        raise ImageBuildError(
            f"debootstrap failed with exit status {returncode} (is {spec.mirror} reachable?); "
            f"last output:\n{condenser.tail_text()}"
        )


def _tidy_rootfs(spec: BaseSpec, rootfs: Path) -> None:
    """Drop what a container image never needs, and point apt at updates and security too."""
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        directory = rootfs / cache
        if directory.is_dir():
            for entry in directory.iterdir():
                if entry.is_file() and entry.name != "lock":
                    entry.unlink()
    security = spec.mirror.rstrip("/") + "-security"
    (rootfs / "etc/apt/sources.list").write_text(
        f"deb {spec.mirror} {spec.suite} main\n"
        f"deb {spec.mirror} {spec.suite}-updates main\n"
        f"deb {security} {spec.suite}-security main\n"
    )


def _import_rootfs(client: docker.DockerClient, spec: BaseSpec, rootfs: Path) -> None:
    tar = subprocess.Popen(
        [
            "tar",
            "--numeric-owner",
            "--xattrs",
            "-C",
            str(rootfs),
            # Device nodes and kernel file systems come from the container runtime.
            "--exclude=./dev/*",
            "--exclude=./proc/*",
            "--exclude=./sys/*",
            "-cf",
            "-",
            ".",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert tar.stdout is not None
    repository, tag = spec.reference.split(":")
    try:
        answer = client.api.import_image(
            src=_chunks(tar.stdout),
            repository=repository,
            tag=tag,
            changes=[f"LABEL {BASE_HASH_LABEL}={spec.digest()}", 'CMD ["/bin/bash"]'],
            stream_src=True,
        )
    except docker.errors.APIError as exc:
        tar.kill()
        raise ImageBuildError(f"docker could not import the base rootfs: {exc.explanation}") from None
    finally:
        stderr = tar.stderr.read().decode(errors="replace") if tar.stderr else ""
        tar.wait()
    if tar.returncode != 0:
        raise ImageBuildError(f"tar of the base rootfs failed: {stderr.strip()[-2000:]}")
    if "error" in str(answer).lower() and not base_exists(client, spec):
        raise ImageBuildError(f"docker could not import the base rootfs: {answer}")


def _chunks(stream: IO[bytes], size: int = 1 << 20) -> Iterator[bytes]:
    while True:
        block = stream.read(size)
        if not block:
            return
        yield block
