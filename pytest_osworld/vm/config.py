"""The ``vm`` sandbox profile's configuration, resolved once from the settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pytest_osworld.settings import Settings
from pytest_osworld.vm.qemu_args import Accel

PROFILE = "vm"
# The project's image is a light desktop; OSWorld's Ubuntu is a full GNOME session (its own
# runs give it 4 GB and 4 cores).
OWN_DEFAULTS = (2048, 2)
QCOW2_DEFAULTS = (4096, 4)


@dataclass(frozen=True)
class VmConfig:
    accel: Accel
    reset: Literal["boot", "snapshot"]
    memory_mib: int
    cpus: int
    qcow2: str | None  # a base disk on the environment host; None = the project's own VM image
    firmware: Literal["uefi", "bios"]
    boot_timeout: float
    restore_timeout: float
    screen: tuple[int, int]
    container_cpus: float | None
    container_memory: int | None
    client_password: str = "password"  # the guest user's, for sudo when it is not passwordless


def resolve(settings: Settings) -> VmConfig:
    memory, cpus = QCOW2_DEFAULTS if settings.vm.qcow2 else OWN_DEFAULTS
    if settings.vm.memory is not None:
        memory = max(settings.vm.memory // (1024 * 1024), 256)
    # TCG emulates every instruction: a boot takes minutes where KVM takes seconds.
    boot_timeout = settings.sandbox.start_timeout or (300.0 if settings.vm.accel == "kvm" else 900.0)
    return VmConfig(
        accel=settings.vm.accel,
        reset=settings.vm.reset or "snapshot",
        memory_mib=int(memory),
        cpus=settings.vm.cpus or cpus,
        qcow2=str(settings.vm.qcow2) if settings.vm.qcow2 else None,
        firmware=settings.vm.firmware,
        boot_timeout=boot_timeout,
        restore_timeout=settings.vm.restore_timeout,
        screen=(settings.sandbox.screen_width, settings.sandbox.screen_height),
        container_cpus=settings.sandbox.cpus,
        container_memory=settings.sandbox.memory,
        client_password=settings.sandbox.client_password,
    )
