"""The settings' groups of the infrastructure, where episodes run: the sandbox, the VM sandboxes and the
shared services.

The same kind of groups as ``groups.py`` (which has the base, the model, judge and loop groups, the
reports, the gate and the tasks): a field's flat name is its option, ini key and profile key. The
services group's values are checked against the services package's registry, given at its import
(:func:`use_service_registry`): the settings are the core layer and import no service.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field, ValidationInfo, field_validator

from pytest_osworld.settings.groups import _Group, _listify, _profile_only
from pytest_osworld.units import ByteCount

# OSWorld's VM image as its own runs use it, pinned by registry digest.
OSWORLD_VM_IMAGE = "happysixd/osworld-docker@sha256:0e6497a9295647cf05bf2b2af522fdd79bdeba2737595259cab310a3bcf6baa9"


class ServiceRegistry(Protocol):
    """What the shared services' settings are checked against: the built-in services and the presets.

    The services package gives it (:func:`use_service_registry`, when ``pytest_osworld.services`` is
    imported): the settings are the core layer and import no service. Each check raises ``ValueError``
    with the problem, which the settings word as a :class:`SettingsError` naming the key."""

    def check_preset(self, name: str) -> str: ...

    def check_entries(self, entries: Mapping[str, Any], presets: list[str]) -> None: ...

    def check_suffix(self, value: str) -> str: ...


# None until the services package is imported: then settings made before it (none that the plugin or
# the CLI reads: both import it first) are checked when the services are read (``services.defined``).
_service_registry: ServiceRegistry | None = None


def use_service_registry(registry: ServiceRegistry) -> None:
    """The registry the ``service_presets``, ``services`` and ``service_host_suffix`` values are checked against."""
    global _service_registry
    _service_registry = registry


class SandboxGroup(_Group):
    title: ClassVar[str] = (
        "where episodes run: the sandbox profile, environment hosts, the guest's screen and password, limits, sandboxes kept after a failed task, the warm pool, Ray"
    )
    name: str = Field(
        "desktop", description="sandbox profile name: desktop, osworld-vm, vm or a profile's own", alias="sandbox"
    )
    profiles: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        **_profile_only("sandbox profiles by name, next to the built-in ones"),
        alias="sandbox_profiles",
    )
    docker_host: list[str] = Field(
        default_factory=list, description="environment host URL[=capacity]; repeatable (default: DOCKER_HOST)"
    )
    screen_width: int = Field(1920, ge=320, description="guest screen width")
    screen_height: int = Field(1080, ge=240, description="guest screen height")
    client_password: str = Field("password", description="the guest user's password ({CLIENT_PASSWORD})")
    v2_image: bool = Field(
        False,
        description="the sandbox runs OSWorld-V2's VM image: V2 tasks use its guest password "
        "(osworld-public-evaluation) for {CLIENT_PASSWORD}",
    )
    cpus: float | None = Field(None, gt=0, description="CPUs per sandbox (Docker nano_cpus)", alias="sandbox_cpus")
    memory: ByteCount | None = Field(None, gt=0, description="memory per sandbox, e.g. 4g", alias="sandbox_memory")
    write_bps: ByteCount | None = Field(
        None,
        gt=0,
        description="disk write bandwidth per sandbox, bytes per second, e.g. 100m",
        alias="sandbox_write_bps",
    )
    write_iops: int | None = Field(
        None, gt=0, description="disk write operations per second per sandbox", alias="sandbox_write_iops"
    )
    write_device: str | None = Field(
        None,
        description="block device on the environment host that write limits apply to (default: found)",
        alias="sandbox_write_device",
    )
    start_timeout: float | None = Field(
        None,
        gt=0,
        description="seconds a sandbox may take to answer (default: the profile's)",
        alias="sandbox_start_timeout",
    )
    leftover_age: float = Field(
        6 * 3600.0,
        gt=0,
        description="seconds after which a sandbox counts as left over even if its run looks alive",
        alias="sandbox_leftover_age",
    )
    keep_failed: int = Field(
        0,
        ge=0,
        description="leave the sandboxes of up to N failed or masked tasks running until the run ends, "
        "for a look (listed by pytest-osworld sandboxes; 0: none)",
    )
    keep_failed_until_exit: bool = Field(
        False,
        description="with keep_failed: at the run's end, wait for Enter (or keep_failed_timeout) before "
        "removing the kept sandboxes",
    )
    keep_failed_timeout: float = Field(
        300.0, gt=0, description="with keep_failed_until_exit: the longest wait for Enter at the run's end, seconds"
    )
    warm_pool: int = Field(
        0,
        ge=0,
        description="ready sandboxes kept started ahead, each used by one task: per pytest process on a local "
        "sandbox, per node on ray (0: none, every task waits for its own start)",
    )
    ray_address: str = Field(
        "auto",
        description="ray: the cluster: auto (a Ray node runs on this machine), HOST:PORT of its head, or "
        "ray://HOST:PORT (Ray Client)",
    )
    ray_sandbox: str = Field(
        "desktop", description="ray: the sandbox each node starts: desktop, osworld-vm, vm or a profile's own"
    )
    ray_slot_resource: str = Field(
        "osworld_sandbox",
        description="ray: the custom resource each node declares, one unit per sandbox it may run at once",
    )
    ray_place_timeout: float = Field(
        600.0, gt=0, description="ray: seconds a sandbox may wait for a free slot before its task is masked"
    )
    ray_heartbeat_timeout: float = Field(
        30.0,
        gt=0,
        description="ray: seconds a node agent goes without a heartbeat of the run's process before it ends the "
        "run on its node (its warm pool and sandboxes: the run's process is gone)",
    )

    @field_validator("ray_sandbox")
    @classmethod
    def _ray_sandbox(cls, value: str) -> str:
        if value == "ray":
            raise ValueError(
                "the sandbox each Ray node starts cannot be ray itself: desktop, osworld-vm, vm or a profile's"
            )
        return value

    @field_validator("docker_host", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return _listify(value)


class VmGroup(_Group):
    title: ClassVar[str] = (
        "the VM sandboxes: vm (QEMU in a container of the QEMU image) and osworld-vm (OSWorld's own VM image, upstream_vm_*)"
    )
    accel: Literal["kvm", "tcg"] = Field(
        "kvm",
        description="vm: KVM (checked by booting a test guest) or tcg (emulation: slow, never chosen silently)",
        alias="vm_accel",
    )
    qcow2: Path | None = Field(
        None,
        description="vm: base disk on the environment host, e.g. OSWorld's Ubuntu.qcow2 (default: the project's VM image)",
        alias="vm_qcow2",
    )
    memory: ByteCount | None = Field(
        None, gt=0, description="vm: guest memory, e.g. 4g (default 2g, 4g with vm_qcow2)", alias="vm_memory"
    )
    cpus: int | None = Field(None, ge=1, description="vm: guest vCPUs (default 2, 4 with vm_qcow2)", alias="vm_cpus")
    firmware: Literal["uefi", "bios"] = Field(
        "uefi", description="vm: firmware that boots vm_qcow2 (OSWorld's Ubuntu.qcow2 needs uefi)", alias="vm_firmware"
    )
    reset: Literal["boot", "snapshot"] | None = Field(None, description="VM reset: cold boot or RAM snapshot")
    restore_timeout: float = Field(
        120.0,
        gt=0,
        description="vm: seconds a snapshot restore may take before the sandbox falls back to a cold boot",
        alias="vm_restore_timeout",
    )
    upstream_image: str = Field(
        OSWORLD_VM_IMAGE,
        description="OSWorld's VM image, pinned by digest (or by image id after docker load)",
        alias="upstream_vm_image",
    )
    upstream_qcow2: Path | None = Field(
        None,
        description="the VM disk (Ubuntu.qcow2) on the environment host, mounted read-only",
        alias="upstream_vm_qcow2",
    )
    upstream_disk_size: str = Field("32G", description="osworld-vm: DISK_SIZE of the VM", alias="upstream_vm_disk_size")
    upstream_ram_size: str = Field("4G", description="osworld-vm: RAM_SIZE of the VM", alias="upstream_vm_ram_size")
    upstream_cpu_cores: int = Field(
        4, ge=1, description="osworld-vm: CPU_CORES of the VM", alias="upstream_vm_cpu_cores"
    )
    upstream_kvm: bool = Field(
        True, description="osworld-vm: use KVM (without it QEMU emulates: KVM=N, very slow)", alias="upstream_vm_kvm"
    )


class ServicesGroup(_Group):
    title: ClassVar[str] = (
        "the shared services tasks use: presets, the profile's declarations, hostnames, restarts, the proxy"
    )
    presets: list[str] = Field(
        default_factory=list,
        description="packaged service declarations to add, e.g. osworld-v2 (GitLab, mock websites); repeatable",
        alias="service_presets",
    )
    declared: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        **_profile_only("shared services by name, beside the built-in ones (or adjusting them)"),
        alias="services",
    )
    host_suffix: str = Field(
        "osworld.test",
        description="hostnames of shared services in a sandbox are <service>.<this suffix>",
        alias="service_host_suffix",
    )
    restarts: int = Field(
        1,
        ge=0,
        description="times a shared service found down before a task is restarted before the task is masked",
        alias="service_restarts",
    )
    proxy: bool = Field(
        False,
        description="OSWorld's enable_proxy: tasks with proxy: true get the proxy service, and the Chrome their "
        "setup launches goes through it",
    )

    @field_validator("presets", mode="before")
    @classmethod
    def _listify(cls, value: Any) -> Any:
        return _listify(value)

    @field_validator("presets")
    @classmethod
    def _presets(cls, value: list[str]) -> list[str]:
        registry = _service_registry
        if registry is None:
            return list(dict.fromkeys(value))
        return [registry.check_preset(name) for name in dict.fromkeys(value)]

    @field_validator("declared")
    @classmethod
    def _services(cls, value: dict[str, dict[str, Any]], info: ValidationInfo) -> dict[str, dict[str, Any]]:
        if _service_registry is not None:
            _service_registry.check_entries(value, info.data.get("presets") or [])
        return value

    @field_validator("host_suffix")
    @classmethod
    def _suffix(cls, value: str) -> str:
        return value if _service_registry is None else _service_registry.check_suffix(value)
