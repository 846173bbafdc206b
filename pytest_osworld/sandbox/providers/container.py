"""Sandboxes as containers of a profile (``ContainerProfile``): any image, through the Docker SDK.

One container per sandbox: guest ports published on the environment host's loopback (or its
address for tcp:// engines) at ports the engine picks, read back from the container; ready when
the profile's readiness probe answers (``containers.wait_ready``). This is the provider of a
profile the settings define (``sandbox_profiles``), and the base of the built-in ``desktop`` and
``osworld-vm`` providers, which add what their image needs (a build, a qcow2) through the hooks
below.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self

import docker
import docker.types

from pytest_osworld.errors import SandboxError
from pytest_osworld.sandbox import profiles
from pytest_osworld.sandbox.base import API_PORT, Progress, SandboxConfigError, SandboxProvider
from pytest_osworld.sandbox.containers import ContainerBackedSandbox, Containers, NotReady, RunningContainer, wait_ready
from pytest_osworld.sandbox.hosts import EngineHost, host_pool, pick_host
from pytest_osworld.sandbox.identity import image_identity
from pytest_osworld.sandbox.kvm import probe_kvm
from pytest_osworld.sandbox.labels import LABEL_PROFILE, LABEL_ROLE, LABEL_TASK, ROLE_SANDBOX, Owner
from pytest_osworld.sandbox.probe import find_image, probe_image, run_probe
from pytest_osworld.sandbox.profiles import ContainerProfile, Mount
from pytest_osworld.sandbox.provides import Provides, from_manifest, unknown
from pytest_osworld.sandbox.storage import find_write_device

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

log = logging.getLogger("pytest_osworld.sandbox")


class ContainerSandbox(ContainerBackedSandbox):
    """A sandbox of a container profile."""

    def __init__(self, provider: ContainerProvider, running: RunningContainer, *, task_key: str) -> None:
        super().__init__(provider.containers, running, task_key=task_key)
        self._provider = provider
        self._urls = running.urls(provider.profile.ports)

    def url(self, guest_port: int = API_PORT) -> str:
        try:
            return self._urls[guest_port]
        except KeyError:
            raise SandboxError(
                f"sandbox {self.name}: guest port {guest_port} is not published "
                f"(profile {self._provider.profile.name} publishes {sorted(self._urls)})"
            ) from None

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "container_id": self.container_id,
            "profile": self._provider.profile.name,
            "image": self._provider.profile.image,
            "image_id": self._provider.image_id,
            "host": self._provider.host.display,
            "ready_seconds": round(self.ready_seconds, 3),
        }


class ContainerProvider(SandboxProvider):
    """Starts containers of one profile on one environment host."""

    keeps_sandboxes = True  # each sandbox is one container of this process's ``Containers``

    def __init__(
        self,
        profile: ContainerProfile,
        host: EngineHost,
        owner: Owner,
        *,
        pool: list[EngineHost] | None = None,
        progress: Progress | None = None,
        client: docker.DockerClient | None = None,
    ) -> None:
        self.profile = profile
        self.host = host
        self.owner = owner
        self.pool = pool or [host]
        self._progress = progress or (lambda line: log.info("%s", line))
        self.containers = Containers(host, owner, stop_timeout=profile.stop_timeout, client=client)
        self._prepared = False
        self.image_id: str | None = None
        self._write_device: str | None = profile.resources.write_device

    @property
    def client(self) -> docker.DockerClient:
        return self.containers.client

    # --- the provider class
    @classmethod
    def from_settings(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> Self:
        profile = profiles.resolve(settings)
        pool = host_pool(settings)
        return cls(profile, pick_host(pool, owner.worker_id), owner, pool=pool, progress=progress)

    @classmethod
    def check(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        """Everything that would make every test fail the same way, found on every host and reported
        together: no engine, the image not on the engine (and not buildable), a mount that cannot be
        made, no usable KVM, a write limit without a known disk (and what a subclass adds)."""
        profile = profiles.resolve(settings)
        labels = {**owner.labels(), LABEL_PROFILE: profile.name}
        say = progress or (lambda line: None)
        problems = cls._pool_problems(profile)
        for host in host_pool(settings):
            try:
                client = host.connect()
            except SandboxConfigError as exc:
                problems.append(str(exc))
                continue
            try:
                problems.extend(cls._host_problems(client, host, profile, labels, say))
            finally:
                client.close()
        if problems:
            raise SandboxConfigError(
                f"the sandbox profile {profile.name!r} cannot run here; no test was started:\n  - "
                + "\n  - ".join(problems)
            )

    @classmethod
    def describe_pool(cls, settings: Settings, owner: Owner) -> dict[str, Any]:
        profile = profiles.resolve(settings)
        labels = {**owner.labels(), LABEL_PROFILE: profile.name}
        return cls._describe(profile, host_pool(settings), labels=labels)

    @classmethod
    def provides(cls, settings: Settings, *, build: bool = False, progress: Progress | None = None) -> Provides:
        """What the profile's image provides, read off its manifest label on the first environment host."""
        profile = profiles.resolve(settings)
        host = host_pool(settings)[0]
        try:
            client = host.connect()
        except SandboxConfigError as exc:
            return unknown(profile.name, f"image {profile.image}", str(exc))
        try:
            return cls._image_provides(client, host, profile, build, progress or (lambda line: None))
        except docker.errors.DockerException as exc:
            return unknown(profile.name, f"image {profile.image} on {host.display}", f"the engine refused: {exc}")
        finally:
            client.close()

    # --- hooks of the built-in profiles' providers
    @classmethod
    def _image_provides(
        cls, client: docker.DockerClient, host: EngineHost, profile: ContainerProfile, build_first: bool, say: Progress
    ) -> Provides:
        """What the profile's image provides: its manifest label (an image built FROM the desktop inherits it)."""
        from pytest_osworld.guest.build import MANIFEST_LABEL, parse_manifest

        image = find_image(client, profile.image)
        if image is None:
            return unknown(profile.name, f"image {profile.image}", cls._missing_image(profile, host))
        labels = image.attrs.get("Config", {}).get("Labels") or {}
        return from_manifest(
            profile.name,
            parse_manifest(labels.get(MANIFEST_LABEL)),
            f"image {profile.image} ({image.id.removeprefix('sha256:')[:12]}) on {host.display}",
            fix=f"give the image the label {MANIFEST_LABEL} (an image built FROM pytest-osworld/desktop inherits "
            "the desktop's; run its image-manifest step again after installing more)",
        )

    @classmethod
    def _pool_problems(cls, profile: ContainerProfile) -> list[str]:
        """Problems of the profile itself, whatever the host."""
        return []

    @classmethod
    def _image_problems(
        cls, client: docker.DockerClient, host: EngineHost, profile: ContainerProfile, say: Progress
    ) -> list[str]:
        if find_image(client, profile.image) is None:
            return [cls._missing_image(profile, host)]
        return []

    @classmethod
    def _image_pin(cls, profile: ContainerProfile) -> str:
        """Where a user pins the profile's image by id."""
        return f"sandbox_profiles.{profile.name}.image: sha256:<id shown by docker load>"

    @classmethod
    def _probed_problems(
        cls,
        client: docker.DockerClient,
        probe: str,
        host: EngineHost,
        profile: ContainerProfile,
        labels: dict[str, str],
    ) -> list[str]:
        """Problems found by probe containers (of image ``probe``) on one host."""
        problems: list[str] = []
        if profile.kvm:
            report = probe_kvm(client, probe, host.display, labels)
            if not report.usable:
                problems.append(report.problem)
        own_mounts = cls._checked_mounts(profile)
        if own_mounts:
            mounts = [
                docker.types.Mount(target=m.target, source=m.source, type="bind", read_only=True) for m in own_mounts
            ]
            result = run_probe(client, probe, "true", labels=labels, mounts=mounts, timeout=30)
            if not result.ran:
                problems.append(
                    f"a mount of profile {profile.name} cannot be made on {host.display}: {result.output.strip()[:200]} "
                    f"(mount sources are paths on the environment host)"
                )
        if profile.resources.limits_writes and not profile.resources.write_device:
            try:
                find_write_device(client, probe, host.display, labels)
            except SandboxConfigError as exc:
                problems.append(str(exc))
        return problems

    @classmethod
    def _checked_mounts(cls, profile: ContainerProfile) -> list[Mount]:
        """The mounts whose sources the check tries (a subclass checks some of its own way)."""
        return list(profile.mounts)

    @classmethod
    def _describe_host(
        cls, client: docker.DockerClient, host: EngineHost, profile: ContainerProfile, labels: dict[str, str]
    ) -> dict[str, Any]:
        """The manifest's entry of one host, beyond its URL and capacity."""
        return {"image": image_identity(client, profile.image)}

    # --- the check and the description, per host
    @classmethod
    def _host_problems(
        cls,
        client: docker.DockerClient,
        host: EngineHost,
        profile: ContainerProfile,
        labels: dict[str, str],
        say: Progress,
    ) -> list[str]:
        problems = cls._image_problems(client, host, profile, say)
        needs_probe = bool(profile.kvm or profile.mounts or profile.resources.limits_writes)
        if not needs_probe:
            return problems
        probe = probe_image(client, [profile.image])
        if probe is None:
            problems.append(
                f"cannot check the qcow2, KVM or mounts on {host.display}: no image with a shell is on that engine "
                f"(load the profile's image first)"
            )
            return problems
        return problems + cls._probed_problems(client, probe, host, profile, labels)

    @classmethod
    def _missing_image(cls, profile: ContainerProfile, host: EngineHost) -> str:
        ref = profile.image
        pin = cls._image_pin(profile)
        if "@sha256:" in ref:
            return (
                f"image {ref} (profile {profile.name}) is not on the engine at {host.display}, and no registry can be "
                f"pulled from here. Load it: on a machine that reaches the registry run `docker pull {ref}` and "
                f"`docker save {ref} -o image.tar`, copy image.tar over, then `docker load -i image.tar` on the "
                f"environment host. `docker load` keeps the image id but not the registry digest: then pin it by id "
                f"({pin})"
            )
        return (
            f"image {ref} (profile {profile.name}) is not on the engine at {host.display}; build or load it there "
            f"(`docker load -i image.tar`), or fix the profile's image"
        )

    @classmethod
    def _describe(
        cls,
        profile: ContainerProfile,
        pool: list[EngineHost],
        *,
        clients: dict[EngineHost, docker.DockerClient] | None = None,
        labels: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The run manifest's view of the sandboxes: profile, limits, and per host what it runs on."""
        hosts = []
        for host in pool:
            entry: dict[str, Any] = {"host": host.display, "capacity": host.capacity}
            client = (clients or {}).get(host)
            own = client is None
            try:
                client = client or host.connect()
                entry.update(cls._describe_host(client, host, profile, labels or {}))
            except SandboxConfigError as exc:
                entry["problem"] = str(exc)
            finally:
                if own and client is not None:
                    client.close()
            hosts.append(entry)
        return {
            "profile": profile.name,
            "image": profile.image,
            "resources": profile.resources.model_dump(exclude_none=True),
            "readiness": profile.readiness.model_dump(),
            "hosts": hosts,
        }

    # --- preparation, once per provider
    def prepare(self) -> None:
        """Make the image present (see ``_ensure_image``) and resolve write limits."""
        if self._prepared:
            return
        self.image_id = self._ensure_image()
        if self.profile.resources.limits_writes and self._write_device is None:
            probe = probe_image(self.client, [self.profile.image])
            if probe is None:
                raise SandboxConfigError(
                    f"write limits are set but no image with a shell is on {self.host.display} to find the data disk; "
                    f"set --osworld-sandbox-write-device /dev/NAME"
                )
            self._write_device = find_write_device(self.client, probe, self.host.display, self._probe_labels())
        self._prepared = True

    def _ensure_image(self) -> str:
        """The id of the profile's image on this engine; :class:`SandboxConfigError` when it is not there."""
        image = find_image(self.client, self.profile.image)
        if image is None:
            raise SandboxConfigError(self._missing_image(self.profile, self.host))
        image_id: str = image.id
        return image_id

    def _probe_labels(self) -> dict[str, str]:
        return {**self.owner.labels(), LABEL_PROFILE: self.profile.name}

    # --- sandboxes
    def start_on_network(
        self, *, task_key: str, network: str, labels: Mapping[str, str] | None = None
    ) -> ContainerSandbox:
        return self.start(task_key=task_key, labels=labels, network=network)

    def start(
        self, *, task_key: str, labels: Mapping[str, str] | None = None, network: str | None = None
    ) -> ContainerSandbox:
        """``network``: a Docker network the container is created on instead of the default bridge (a
        run's services' network); created on it, not connected later, so its DNS resolves their names."""
        try:
            self.prepare()
        except SandboxConfigError as exc:
            raise SandboxError(str(exc)) from None
        all_labels = {
            **(labels or {}),
            **self.owner.labels(),
            LABEL_TASK: task_key,
            LABEL_PROFILE: self.profile.name,
            LABEL_ROLE: ROLE_SANDBOX,
        }
        probe = self.profile.readiness
        started = time.monotonic()
        args = self._create_args(all_labels)
        if network is not None:
            args["network"] = network
        running = self.containers.start(
            args,
            ports=self.profile.ports,
            refused=f"a {self.profile.name} sandbox",
            port_kind="guest port",
        )
        with self.containers.removed_on_failure(running):
            sandbox = ContainerSandbox(self, running, task_key=task_key)
            wait_ready(
                running,
                sandbox.url(probe.port) + probe.path,
                status=probe.status,
                deadline=started + probe.deadline,
                explain=self._not_ready,
            )
        sandbox.ready_seconds = time.monotonic() - started
        return sandbox

    def _not_ready(self, why: NotReady) -> SandboxError:
        profile, probe = self.profile, self.profile.readiness
        if why.cause == "removed":
            return SandboxError(f"sandbox {why.name} ({profile.name}) was removed while starting")
        if why.cause == "ended":
            return SandboxError(
                f"sandbox {why.name} ({profile.name}, image {profile.image}) died while starting{why.state}"
            )
        return SandboxError(
            f"sandbox {why.name} ({profile.name}) did not answer GET {probe.path} on guest "
            f"port {probe.port} with {probe.status} within {probe.deadline:g} s (last: {why.last})"
            f"{why.state}; a slow host may need --osworld-sandbox-start-timeout"
        )

    def _create_args(self, labels: dict[str, str]) -> dict[str, Any]:
        profile = self.profile
        resources = profile.resources
        args: dict[str, Any] = {
            "image": self.image_id or profile.image,
            "labels": labels,
            "environment": dict(profile.env),
        }
        if profile.command is not None:
            args["command"] = profile.command
        if profile.devices:
            args["devices"] = list(profile.devices)
        if profile.mounts:
            # Mounts, not volume binds: a missing source must fail, not become an empty folder.
            args["mounts"] = [
                docker.types.Mount(target=m.target, source=m.source, type="bind", read_only=m.read_only)
                for m in profile.mounts
            ]
        if profile.cap_add:
            args["cap_add"] = list(profile.cap_add)
        if profile.shm_size:
            args["shm_size"] = profile.shm_size
        if resources.cpus:
            args["nano_cpus"] = int(resources.cpus * 1e9)
        if resources.memory:
            args["mem_limit"] = resources.memory
            args["memswap_limit"] = resources.memory  # no swap beyond the limit: a limit that holds
        if resources.write_bps and self._write_device:
            args["device_write_bps"] = [{"Path": self._write_device, "Rate": resources.write_bps}]
        if resources.write_iops and self._write_device:
            args["device_write_iops"] = [{"Path": self._write_device, "Rate": resources.write_iops}]
        return args

    # --- identity and the end
    def describe(self) -> dict[str, Any]:
        return self._describe(self.profile, self.pool, clients={self.host: self.client}, labels=self._probe_labels())

    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        return self.containers.sweep(run_id, pid=pid)

    def close(self) -> None:
        self.containers.close()
