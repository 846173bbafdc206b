"""Sandbox profiles: what container a sandbox is, resolved once from the settings.

Built in: ``desktop`` (the project's image, built when missing) and ``osworld-vm`` (OSWorld's QEMU
image running ``Ubuntu.qcow2``). ``sandbox_profiles`` in the YAML profile adds profiles of its own
(a ``ContainerProfile``) or adjusts the built-in ones. Precedence: built-in defaults < the
``sandbox_profiles`` entry < flat settings given explicitly (``--osworld-sandbox-memory`` etc.).
A profile may declare the OSWorld apps its image has (``apps``, :func:`declared_apps`): the run's skips
and ``tasks support`` take that list over the image's manifest (:func:`sandbox_provides`: what the chosen
sandbox provides, for them and for a Ray node's answer).
"""

from __future__ import annotations

import sys
from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pytest_osworld.sandbox.base import API_PORT, GUEST_PORTS, Progress, SandboxConfigError
from pytest_osworld.sandbox.kvm import KVM_DEVICE
from pytest_osworld.sandbox.provides import Provides, with_declared_apps
from pytest_osworld.sandbox.registry import provider_class, unknown_sandbox
from pytest_osworld.settings import Settings
from pytest_osworld.units import ByteCount, HttpPath

DESKTOP = "desktop"
OSWORLD_VM = "osworld-vm"
DESKTOP_IMAGE = "pytest-osworld/desktop:latest"
QCOW2_TARGET = "/System.qcow2"  # where OSWorld's image expects its disk
QCOW2_SOURCE_URL = "https://huggingface.co/datasets/xlangai/ubuntu_osworld/resolve/main/Ubuntu.qcow2.zip"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Readiness(_Model):
    """Ready = the first ``status`` answer to ``GET path`` on the guest ``port``, within ``deadline`` seconds."""

    port: int = Field(API_PORT, ge=1, le=65535)
    path: HttpPath = "/screenshot"
    status: int = Field(200, ge=100, le=599)
    deadline: float = Field(120.0, gt=0)


class Resources(_Model):
    cpus: float | None = Field(None, gt=0)
    memory: ByteCount | None = Field(None, gt=0)
    write_bps: ByteCount | None = Field(None, gt=0)
    write_iops: int | None = Field(None, gt=0)
    # The block device on the environment host that write limits apply to; found when unset.
    write_device: str | None = None

    @property
    def limits_writes(self) -> bool:
        return self.write_bps is not None or self.write_iops is not None


class Mount(_Model):
    """A path of the environment host mounted into the sandbox; ``"source:target[:ro|rw]"`` also works."""

    source: str
    target: str
    read_only: bool = True

    @classmethod
    def parse(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        parts = value.split(":")
        if len(parts) == 2:
            return {"source": parts[0], "target": parts[1]}
        if len(parts) == 3 and parts[2] in ("ro", "rw"):
            return {"source": parts[0], "target": parts[1], "read_only": parts[2] == "ro"}
        raise ValueError(f"{value!r}: write source:target, source:target:ro or source:target:rw")

    @field_validator("source", "target")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not PurePosixPath(value).is_absolute():
            raise ValueError(f"{value!r} is not an absolute path")
        return value


class ContainerProfile(_Model):
    """A sandbox as a container. Also the schema of an own profile in ``sandbox_profiles``."""

    name: str = ""
    image: str
    command: list[str] | str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    devices: list[str] = Field(default_factory=list)
    mounts: list[Mount] = Field(default_factory=list)
    ports: list[int] = Field(default_factory=lambda: list(GUEST_PORTS))
    readiness: Readiness = Field(default_factory=Readiness)
    resources: Resources = Field(default_factory=Resources)
    cap_add: list[str] = Field(default_factory=list)
    shm_size: ByteCount | None = Field(None, gt=0)
    stop_timeout: float = Field(0.0, ge=0)  # seconds between SIGTERM and SIGKILL at teardown
    # Checked before the session by a probe container on each environment host.
    kvm: bool = False
    # The OSWorld apps the image provides, declared: wins over its manifest's (tasks needing others are
    # skipped as unrunnable); None: the image manifest says (see sandbox/provides.py).
    apps: list[str] | None = None
    # Set by the built-ins only: "desktop" builds the image when missing; qcow2 is described and checked.
    build: Literal["desktop"] | None = None
    qcow2: str | None = None

    @field_validator("mounts", mode="before")
    @classmethod
    def _mounts(cls, value: Any) -> Any:
        return [Mount.parse(v) for v in value] if isinstance(value, list) else value

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: Any) -> Any:
        # YAML turns 4 and yes into int and bool; the container sees text either way.
        if isinstance(value, dict):
            return {str(k): _env_text(v) for k, v in value.items()}
        return value

    @field_validator("ports")
    @classmethod
    def _ports(cls, value: list[int]) -> list[int]:
        for port in value:
            if not 1 <= port <= 65535:
                raise ValueError(f"{port} is not a port number")
        return sorted(set(value))


def _env_text(value: Any) -> str:
    if isinstance(value, bool):
        return "Y" if value else "N"
    return str(value)


class _OwnProfile(ContainerProfile):
    """What a user may write for a profile of their own: no built-in-only keys."""

    build: None = None
    qcow2: None = None


class _DesktopOverrides(_Model):
    image: str | None = None
    apps: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    readiness: Readiness | None = None
    resources: Resources | None = None
    shm_size: ByteCount | None = Field(None, gt=0)
    stop_timeout: float | None = Field(None, ge=0)


class _OsworldVmOverrides(_Model):
    image: str | None = None
    qcow2: str | None = None
    apps: list[str] | None = None
    disk_size: str | None = None
    ram_size: str | None = None
    cpu_cores: int | None = Field(None, ge=1)
    kvm: bool | None = None
    env: dict[str, str] = Field(default_factory=dict)
    readiness: Readiness | None = None
    resources: Resources | None = None
    stop_timeout: float | None = Field(None, ge=0)


def resolve(settings: Settings) -> ContainerProfile:
    """The profile named by ``settings.sandbox.name``, with the settings applied; errors name the key."""
    name = settings.sandbox.name
    entry = settings.sandbox.profiles.get(name)
    if entry is not None and not isinstance(entry, dict):
        raise SandboxConfigError(f"sandbox_profiles.{name}: expected a mapping of profile keys, got {entry!r}")
    if name == DESKTOP:
        profile = _desktop(settings, _validate(_DesktopOverrides, entry or {}, name))
    elif name == OSWORLD_VM:
        profile = _osworld_vm(settings, _validate(_OsworldVmOverrides, entry or {}, name))
    elif entry is not None:
        profile = _validate(_OwnProfile, {**entry, "name": name}, name)
        profile = ContainerProfile.model_validate(profile.model_dump())
    else:
        raise unknown_sandbox(name, settings)
    return _apply_flat_settings(profile, settings)


def declared_apps(settings: Settings) -> list[str] | None:
    """The apps ``sandbox_profiles.<sandbox>.apps`` declares for the chosen sandbox, or None.

    Read off the settings without resolving the whole profile (any sandbox's entry may declare them);
    the profile's own validation, at the session's check, reports any other problem of the entry.
    """
    entry = settings.sandbox.profiles.get(settings.sandbox.name)
    apps = entry.get("apps") if isinstance(entry, dict) else None
    if apps is None:
        return None
    if not isinstance(apps, list) or not all(isinstance(app, str) for app in apps):
        raise SandboxConfigError(
            f"sandbox_profiles.{settings.sandbox.name}.apps: expected a list of OSWorld app names, got {apps!r}"
        )
    return apps


def _validate(model: type[_Model], data: dict[str, Any], name: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            key = ".".join(str(part) for part in ("sandbox_profiles", name, *err["loc"]))
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown key" + _known_keys(model)
            elif err["type"] != "value_error":
                message += f" (got {err.get('input')!r})"
            problems.append(f"{key}: {message}")
        raise SandboxConfigError("invalid sandbox profile:\n  " + "\n  ".join(problems)) from None


def _known_keys(model: type[_Model]) -> str:
    keys = [k for k in model.model_fields if k not in ("name", "build", "qcow2") or model is _OsworldVmOverrides]
    return f" (known: {', '.join(keys)})"


def _desktop(settings: Settings, over: _DesktopOverrides) -> ContainerProfile:
    env = {
        "SCREEN_WIDTH": str(settings.sandbox.screen_width),
        "SCREEN_HEIGHT": str(settings.sandbox.screen_height),
        **over.env,
    }
    return ContainerProfile(
        name=DESKTOP,
        image=over.image or DESKTOP_IMAGE,
        apps=over.apps,
        build="desktop" if over.image is None else None,
        env=env,
        ports=list(GUEST_PORTS),
        # Chromium and LibreOffice use /dev/shm; Docker's 64 MB default makes them crash.
        shm_size=over.shm_size or 512 * 1024**2,
        readiness=over.readiness or Readiness(deadline=60.0),
        resources=over.resources or Resources(),
        stop_timeout=over.stop_timeout if over.stop_timeout is not None else 0.0,
    )


def _osworld_vm(settings: Settings, over: _OsworldVmOverrides) -> ContainerProfile:
    def pick(flat: str, override: Any) -> Any:
        value = settings.value(flat)
        return value if settings.given(flat) or override is None else override

    qcow2_setting = pick("upstream_vm_qcow2", over.qcow2)
    kvm = bool(pick("upstream_vm_kvm", over.kvm))
    env = {
        "DISK_SIZE": str(pick("upstream_vm_disk_size", over.disk_size)),
        "RAM_SIZE": str(pick("upstream_vm_ram_size", over.ram_size)),
        "CPU_CORES": str(pick("upstream_vm_cpu_cores", over.cpu_cores)),
        **over.env,
    }
    if not kvm:
        env["KVM"] = "N"
    qcow2 = str(qcow2_setting) if qcow2_setting is not None else None
    return ContainerProfile(
        name=OSWORLD_VM,
        image=pick("upstream_vm_image", over.image),
        apps=over.apps,
        env=env,
        devices=[KVM_DEVICE] if kvm else [],
        mounts=[Mount(source=qcow2, target=QCOW2_TARGET, read_only=True)] if qcow2 else [],
        ports=list(GUEST_PORTS),
        cap_add=["NET_ADMIN"],
        # A full boot of the VM: OSWorld allows it 300 s.
        readiness=over.readiness or Readiness(deadline=300.0),
        resources=over.resources or Resources(),
        stop_timeout=over.stop_timeout if over.stop_timeout is not None else 0.0,
        kvm=kvm,
        qcow2=qcow2,
    )


def _apply_flat_settings(profile: ContainerProfile, settings: Settings) -> ContainerProfile:
    resources = profile.resources.model_copy(
        update={
            key: value
            for key, value in (
                ("cpus", settings.sandbox.cpus),
                ("memory", settings.sandbox.memory),
                ("write_bps", settings.sandbox.write_bps),
                ("write_iops", settings.sandbox.write_iops),
                ("write_device", settings.sandbox.write_device),
            )
            if value is not None
        }
    )
    readiness = profile.readiness
    if settings.sandbox.start_timeout is not None:
        readiness = readiness.model_copy(update={"deadline": settings.sandbox.start_timeout})
    return profile.model_copy(update={"resources": resources, "readiness": readiness})


def sandbox_provides(settings: Settings, *, build: bool = False, progress: Progress | None = None) -> Provides:
    """What ``settings.sandbox.name`` provides, asked of its provider (no sandbox starts; a build only when
    asked), with the apps its profile declares (``sandbox_profiles.NAME.apps``) in place of the manifest's.
    Raises :class:`SandboxConfigError` for a sandbox that is not defined or a malformed ``apps``."""

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    name = settings.sandbox.name
    apps = declared_apps(settings)  # SandboxConfigError, as an unknown sandbox name: the caller says it
    found = provider_class(name, settings).provides(settings, build=build, progress=progress or say)
    return found if apps is None else with_declared_apps(found, apps, f"sandbox_profiles.{name}.apps")
