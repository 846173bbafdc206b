"""The project's bootable VM image: the desktop image's filesystem on a qcow2, plus a kernel.

1. ``pytest-osworld/desktop-vm:<hash>``: the desktop image with Debian's kernel, an initramfs for
   virtio disks and an init (``guest/``) layered on by a Dockerfile, so the Docker layer cache
   keeps rebuilds short.
2. A container of it is exported (one flat tar stream) into a build container of the QEMU
   image, which puts the tree on an ext4 filesystem (``mkfs.ext4 -d``, no privileges or loop
   devices needed), converts it to qcow2 and stores it in the VM store with the kernel and the
   initramfs beside it (direct kernel boot: no bootloader to install or to wait for).

The image is keyed by a hash of the desktop image's build hash and this package's guest files;
``ensure_vm_image`` builds only when the store has no image of the current hash.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors

from pytest_osworld.errors import OsworldError
from pytest_osworld.guest import build as desktop_build
from pytest_osworld.guest.docker_build import BUILD_HASH_LABEL, ContextFile, run_build, untag_stale
from pytest_osworld.guest.progress import LineCondenser
from pytest_osworld.locks import file_lock
from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_ROLE, ROLE_VM_BUILD
from pytest_osworld.vm import qemu_image, store
from pytest_osworld.vm.errors import VmBuildError

REPOSITORY = "pytest-osworld/desktop-vm"
GUEST_DIR = Path(__file__).resolve().parent / "guest"
DISK_SIZE = "16G"  # the guest's filesystem size; the qcow2 only holds what is used
FORMAT = 1  # bump when the assembly below changes what ends up in the store

Progress = Callable[[str], None]


@dataclass(frozen=True)
class VmImage:
    """A VM image in the store: paths as the QEMU containers see them."""

    hash: str

    @property
    def directory(self) -> str:
        return f"{store.IMAGES}/{self.hash}"

    @property
    def disk(self) -> str:
        return f"{self.directory}/disk.qcow2"

    @property
    def kernel(self) -> str:
        return f"{self.directory}/vmlinuz"

    @property
    def initrd(self) -> str:
        return f"{self.directory}/initrd.img"


def _guest_files() -> list[tuple[str, bytes]]:
    return [(p.name, p.read_bytes()) for p in sorted(GUEST_DIR.iterdir()) if p.is_file()]


def vm_hash(desktop_hash: str | None = None) -> str:
    """The VM image's hash: the desktop image's build hash, the guest files, the assembly format."""
    digest = hashlib.sha256(
        f"desktop {desktop_hash or desktop_build.context_hash()}\nformat {FORMAT} {DISK_SIZE}\n".encode()
    )
    for name, data in _guest_files():
        digest.update(f"{name} {len(data)}\n".encode() + data)
    return digest.hexdigest()


def stored_image(
    client: docker.DockerClient, qemu_image_id: str, wanted: str, labels: dict[str, str]
) -> VmImage | None:
    """The image of hash ``wanted`` when the store holds it complete."""
    image = VmImage(wanted)
    meta = store.read_json(client, qemu_image_id, f"{image.directory}/meta.json", labels)
    return image if meta is not None and meta.get("hash") == wanted else None


def ensure_vm_image(
    client: docker.DockerClient, *, labels: dict[str, str], progress: Progress | None = None, force: bool = False
) -> VmImage:
    """The current VM image in this engine's store, built first when missing or stale."""
    say = progress or (lambda line: None)
    try:
        desktop = desktop_build.ensure_image(client, progress=say)
    except OsworldError as exc:
        raise VmBuildError(f"the VM image needs the desktop image first, which failed: {exc}") from None
    qemu_image_id = qemu_image.ensure_qemu_image(client, say)
    wanted = vm_hash(desktop.build_hash)
    if not force and (found := stored_image(client, qemu_image_id, wanted, labels)):
        return found
    with file_lock("vm-image-build", lambda: say("another process is building the VM image; waiting for it")):
        if not force and (found := stored_image(client, qemu_image_id, wanted, labels)):
            return found
        started = time.monotonic()
        layered = _build_layered(client, desktop.id, wanted, say)
        image = _assemble(client, qemu_image_id, layered, wanted, labels, say)
        say(f"VM image {wanted[:12]} ready in the store volume {store.VOLUME} ({time.monotonic() - started:.0f} s)")
        return image


def _build_layered(client: docker.DockerClient, desktop_id: str, wanted: str, say: Progress) -> str:
    tag = f"{REPOSITORY}:{wanted[:12]}"
    say(f"building {tag} (kernel and init on the desktop image)")
    files = [ContextFile(name, data) for name, data in _guest_files()]
    try:
        image_id = run_build(
            client,
            files,
            tag=tag,
            buildargs={"DESKTOP_IMAGE": desktop_id},
            labels={BUILD_HASH_LABEL: wanted},
            what="VM image",
            error=VmBuildError,
            progress=say,
        )
    except docker.errors.APIError as exc:
        raise VmBuildError(f"the Docker engine refused the VM image build: {exc.explanation or exc}") from None
    untag_stale(client, REPOSITORY, keep=(tag,))
    return str(image_id)


# Run in the build container: the exported tree is at /build/root. Files that Docker manages in
# every container (hosts, resolv.conf, hostname) are written by the VM's init at boot instead.
_ASSEMBLE = r"""
set -eu
root=/build/root
out="$1"; final="$2"; hash="$3"; size="$4"
rm -rf "$out"; mkdir -p "$out"
rm -f "$root/.dockerenv"
cp "$(ls -1 $root/boot/vmlinuz-* | sort -V | tail -n 1)" "$out/vmlinuz"
cp "$(ls -1 $root/boot/initrd.img-* | sort -V | tail -n 1)" "$out/initrd.img"
echo "making the ext4 filesystem ($size)"
truncate -s "$size" /build/disk.raw
mkfs.ext4 -q -F -L pytest-osworld -E lazy_itable_init=0,lazy_journal_init=0 -d "$root" /build/disk.raw
echo "converting to qcow2"
qemu-img convert -f raw -O qcow2 -o cluster_size=65536 /build/disk.raw "$out/disk.qcow2"
rm -f /build/disk.raw
printf '{"hash": "%s", "kernel": "%s"}\n' "$hash" "$(ls -1 $root/boot/vmlinuz-* | sort -V | tail -n 1 | xargs basename)" > "$out/meta.json"
# Older images and the states saved from them are never used again. Another build's partial folder is
# left alone while it may still be written (a second run building at the same time).
for old in /store/images/*; do
    [ "$old" = "$final" ] || [ "$old" = "$out" ] && continue
    case "$old" in *.partial-*) [ -n "$(find "$old" -maxdepth 0 -mmin +60)" ] || continue ;; esac
    rm -rf "$old"
done
for state in /store/states/*; do
    grep -q '"base": "pytest-osworld-vm:' "$state/meta.json" 2>/dev/null || continue
    grep -q "pytest-osworld-vm:$hash" "$state/meta.json" || rm -rf "$state"
done
rm -rf "$final"; mv "$out" "$final"
du -sh "$final"/*
"""


def _assemble(
    client: docker.DockerClient, qemu_image_id: str, layered: str, wanted: str, labels: dict[str, str], say: Progress
) -> VmImage:
    image = VmImage(wanted)
    token = secrets.token_hex(3)
    all_labels = {**labels, LABEL_MANAGED: "1", LABEL_ROLE: ROLE_VM_BUILD}
    store.ensure_volume(client)
    source = builder = None
    try:
        source = client.containers.create(
            layered, name=f"pytest-osworld-vm-export-{token}", labels=all_labels, entrypoint=["/bin/true"]
        )
        builder = client.containers.create(
            qemu_image_id,
            name=f"pytest-osworld-vm-build-{token}",
            labels=all_labels,
            entrypoint=["/bin/sh", "-c"],
            command=["mkdir -p /build/root && exec sleep infinity"],
            mounts=[store.mount(read_only=False)],
            network_disabled=True,
            user="0",
        )
        builder.start()
        _wait_for_dir(builder)
        say("copying the desktop's filesystem into the build container")
        # put_archive unpacks as the engine does for `docker cp`: owners, modes (setuid), links kept.
        if not builder.put_archive("/build/root", source.export(chunk_size=1 << 20)):
            raise VmBuildError("the engine did not unpack the exported desktop filesystem")
        say("making the disk image")
        partial = f"{image.directory}.partial-{token}"
        exit_code, output = _exec(
            builder, ["sh", "-c", _ASSEMBLE, "assemble", partial, image.directory, wanted, DISK_SIZE], say
        )
        if exit_code != 0:
            raise VmBuildError(f"making the VM disk image failed (exit {exit_code}); last output:\n{output[-3000:]}")
    except docker.errors.APIError as exc:
        raise VmBuildError(
            f"the Docker engine refused a step of the VM image build: {exc.explanation or exc}"
        ) from None
    finally:
        for container in (builder, source):
            if container is not None:
                with contextlib.suppress(docker.errors.DockerException):
                    container.remove(force=True, v=True)
    return image


def _wait_for_dir(container: docker.models.containers.Container) -> None:
    for _ in range(200):
        if container.exec_run(["test", "-d", "/build/root"]).exit_code == 0:
            return
        time.sleep(0.05)  # poll interval while the container starts
    raise VmBuildError("the VM build container did not start")


def _exec(container: docker.models.containers.Container, command: list[str], say: Progress) -> tuple[int, str]:
    exec_id = container.client.api.exec_create(container.id, command, user="0")["Id"]
    condenser = LineCondenser(say, prefix="    ")
    text = []
    for chunk in container.client.api.exec_start(exec_id, stream=True):
        for line in chunk.decode("utf-8", "replace").splitlines():
            text.append(line)
            condenser.feed(line, important=True)
    condenser.flush()
    code = container.client.api.exec_inspect(exec_id).get("ExitCode")
    return int(code if code is not None else -1), "\n".join(text)
