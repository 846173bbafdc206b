"""The QEMU command line of a sandbox VM, and the part of it a saved state depends on.

Every VM of one configuration gets the same command line: the disk is always the overlay at
``/run/vm/disk.qcow2`` inside its container and the guest ports are forwarded to the same
container ports (Docker maps those to host ports). So a state saved by one VM can be loaded by
any other of the same configuration; only ``-incoming`` is added for a restore.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Literal

from pytest_osworld.sandbox import GUEST_PORTS

QMP_PORT = 4444  # inside the container; published on the host's loopback like the guest ports
DISK = "/run/vm/disk.qcow2"
VARS = "/run/vm/vars.fd"
PIDFILE = "/run/vm/qemu.pid"
OVMF_CODE = "/usr/share/OVMF/OVMF_CODE_4M.fd"
OVMF_VARS = "/usr/share/OVMF/OVMF_VARS_4M.fd"
GUEST_IP = "10.0.2.15"  # QEMU user-mode networking's first guest address
INIT = "/usr/local/sbin/pytest-osworld-init"

Accel = Literal["kvm", "tcg"]


@dataclass(frozen=True)
class KernelBoot:
    """Direct kernel boot (the project's image): no firmware menu or bootloader to wait for."""

    kernel: str
    initrd: str
    screen: tuple[int, int] = (1920, 1080)

    def append(self) -> str:
        width, height = self.screen
        return (
            f"root=/dev/vda rw console=ttyS0 quiet fsck.mode=skip net.ifnames=0 init={INIT} panic=-1 "
            f"pytest_osworld.screen={width}x{height}"
        )


@dataclass(frozen=True)
class DiskBoot:
    """Boot from the disk's own bootloader (OSWorld's Ubuntu.qcow2 is a GPT disk that needs UEFI)."""

    firmware: Literal["uefi", "bios"] = "uefi"


@dataclass(frozen=True)
class MachineSpec:
    memory_mib: int
    cpus: int
    accel: Accel
    boot: KernelBoot | DiskBoot

    def argv(self, *, incoming: str | None = None) -> list[str]:
        """``qemu-system-x86_64``'s arguments (without the program name)."""
        args = [
            "-name",
            "pytest-osworld",
            "-machine",
            "q35",
            "-accel",
            "kvm" if self.accel == "kvm" else "tcg,thread=multi",
            # KVM: the host's CPU, as fast as it gets; TCG: every feature the emulator has, stable
            # for one QEMU version (the QEMU image is part of a saved state's key).
            "-cpu",
            "host" if self.accel == "kvm" else "max",
            "-smp",
            str(self.cpus),
            "-m",
            f"{self.memory_mib}M",
            "-nodefaults",
            "-no-user-config",
            "-display",
            "none",
            "-vga",
            "none",
            "-chardev",
            "stdio,id=console,signal=off",
            "-serial",
            "chardev:console",
            "-monitor",
            "none",
            "-qmp",
            f"tcp:0.0.0.0:{QMP_PORT},server=on,wait=off",
            "-pidfile",
            PIDFILE,
            "-rtc",
            "base=utc",
            # A guest that reboots or panics ends QEMU, and so the container: the sandbox is lost.
            "-no-reboot",
            # The overlay is thrown away with the sandbox: no flushes to wait for.
            "-drive",
            f"file={DISK},if=none,id=disk0,format=qcow2,cache=unsafe,discard=unmap",
            "-device",
            "virtio-blk-pci,drive=disk0,bootindex=1",
            "-netdev",
            "user,id=net0," + ",".join(f"hostfwd=tcp::{port}-:{port}" for port in GUEST_PORTS),
            "-device",
            "virtio-net-pci,netdev=net0,romfile=",
            "-device",
            "virtio-rng-pci",
        ]
        if isinstance(self.boot, KernelBoot):
            args += ["-kernel", self.boot.kernel, "-initrd", self.boot.initrd, "-append", self.boot.append()]
        elif self.boot.firmware == "uefi":
            args += [
                "-drive",
                f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
                "-drive",
                f"if=pflash,format=raw,unit=1,file={VARS}",
            ]
        if incoming is not None:
            args += ["-incoming", incoming]
        return args

    @property
    def uses_vars(self) -> bool:
        return isinstance(self.boot, DiskBoot) and self.boot.firmware == "uefi"

    def describe(self) -> dict[str, object]:
        return {
            "memory_mib": self.memory_mib,
            "cpus": self.cpus,
            "accel": self.accel,
            "boot": asdict(self.boot),
            "boot_kind": type(self.boot).__name__,
        }


def state_key(spec: MachineSpec, *, base_identity: str, qemu_identity: str) -> str:
    """The key of a saved state: what the base disk is, which QEMU, and the exact command line.

    A state can only be loaded by the same QEMU with the same machine on the same disk content;
    any change to one of them gives a new key, and so a new state.
    """
    # "runner" is the QEMU image's identity, under the key every saved state's key was made with
    # (another key would make every saved state unreachable).
    material = json.dumps(
        {"base": base_identity, "runner": qemu_identity, "argv": spec.argv(), "format": 1}, sort_keys=True
    )
    return hashlib.sha256(material.encode()).hexdigest()[:32]
