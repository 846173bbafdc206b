"""The life of a provider's containers, written once: start, reach, wait until ready, remove, sweep.

Every provider here runs a sandbox as one container on a Docker engine (the desktop and custom
profiles run the desktop itself, the vm provider runs QEMU); they differ in what runs inside and
how readiness is judged, not in how a container is started, named, reached, watched or removed:

- ``Containers.start``: create and start, the engine's refusal as :class:`SandboxError`, the
  published ports read back (through SSH forwards on an ``ssh://`` host), removal of whatever
  was made when anything fails, an interrupt included (``Containers.launch``, the same without
  reading the ports back, starts a run's shared services, ``services/pool.py``);
- ``wait_ready``: poll a guest URL with backoff; a container that stops meanwhile fails at once
  with its state and last log lines; the provider words the error (``NotReady``);
- ``Containers.remove``: removal (signals held meanwhile), a gone container being fine;
- ``Containers.sweep``: whatever is left of a run, by its labels (``leftovers``);
- ``ContainerBackedSandbox``: a sandbox that is one such container (alive, logs, lost, stop).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import docker
import docker.errors
import httpx
import requests.exceptions

from pytest_osworld.errors import SandboxError, SandboxLost
from pytest_osworld.sandbox.base import Sandbox
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.labels import Owner
from pytest_osworld.sandbox.leftovers import ENGINE_RETURN_S, engine_back, is_unreachable, sweep_run
from pytest_osworld.sandbox.signals import held_interrupts
from pytest_osworld.sandbox.tunnel import Forward, SshTunnels

log = logging.getLogger("pytest_osworld.sandbox")

LOG_LINES = 30
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")
_ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)

# Readiness polling: quick at first (a desktop answers in about a second), then at most once a second.
_FIRST_DELAY = 0.05
_BACKOFF = 1.5
_MAX_DELAY = 1.0


def container_name(run_id: str, worker_id: str | None, serial: str) -> str:
    """``pytest-osworld-<run>-<worker>-<serial>-<random>``: readable, and unique across processes."""
    run = _NAME_UNSAFE.sub("-", run_id)[:40]
    return f"pytest-osworld-{run}-{worker_id or 'main'}-{serial}-{secrets.token_hex(2)}"


class PortAccess:
    """How this process reaches the ports a container publishes on one environment host.

    Ports are published on the host's loopback (or the address a tcp:// URL names) at ports the
    engine picks, read back from the container; an ssh:// host is reached through SSH forwards.
    """

    def __init__(self, host: EngineHost) -> None:
        self.host = host
        self.publish_ip = host.publish_ip()
        self._tunnels = SshTunnels(host.effective_url) if host.is_ssh else None

    def bindings(self, ports: Iterable[int]) -> dict[str, tuple[str, None]]:
        """The ``ports`` argument of a container: each port on the publish address, the engine picks."""
        return {f"{port}/tcp": (self.publish_ip, None) for port in ports}

    def addresses(
        self, container: Any, ports: Iterable[int], forwards: list[Forward], *, what: str = "port"
    ) -> dict[int, tuple[str, int]]:
        """Where each of ``ports`` is reached from here; SSH forwards opened for it go into ``forwards``."""
        published = container.ports or {}
        found: dict[int, tuple[str, int]] = {}
        for port in ports:
            bindings = published.get(f"{port}/tcp") or []
            if not bindings:
                if _has_ended(container):  # an ended container has no published ports left to read
                    raise SandboxError(
                        f"sandbox {container.name} died while starting, before its {what} {port} could be read"
                        f"{state_and_logs(container)}"
                    )
                raise SandboxError(
                    f"the engine at {self.host.display} did not publish {what} {port} of {container.name}"
                    f"{state_and_logs(container)}"
                )
            host_port = int(bindings[0]["HostPort"])
            if self._tunnels is not None:
                forward = self._tunnels.forward(host_port)
                forwards.append(forward)
                found[port] = ("127.0.0.1", forward.local_port)
            else:
                found[port] = (self.publish_ip, host_port)
        return found

    def close(self) -> None:
        if self._tunnels is not None:
            self._tunnels.close()


def _has_ended(container: Any) -> bool:
    with contextlib.suppress(*_ENGINE_ERRORS):
        container.reload()
    return container.status in ("exited", "dead")


@dataclass
class RunningContainer:
    """A started container: the engine's handle, its name, and where its published ports are reached."""

    container: Any  # docker.models.containers.Container
    name: str
    addresses: dict[int, tuple[str, int]]
    forwards: list[Forward] = field(default_factory=list)

    @property
    def id(self) -> str:
        return str(self.container.id)

    def urls(self, ports: Iterable[int]) -> dict[int, str]:
        """``http://`` base URLs of those of ``ports`` the container publishes."""
        wanted = set(ports)
        return {port: f"http://{ip}:{p}" for port, (ip, p) in self.addresses.items() if port in wanted}

    def running(self) -> bool:
        """Whether the engine says it runs; a gone container or a silent engine count as not running."""
        try:
            self.container.reload()
        except _ENGINE_ERRORS:
            return False
        return bool(self.container.status == "running")

    def logs(self, tail: int) -> str:
        return container_logs(self.container, tail)

    def state_and_logs(self) -> str:
        return state_and_logs(self.container)


@dataclass(frozen=True)
class NotReady:
    """Why a container's guest did not get ready; the provider words the error from it."""

    name: str  # the container's
    cause: Literal["removed", "ended", "deadline"]
    last: str = ""  # the readiness probe's last answer or error
    waited: float = 0.0  # seconds since the wait began
    state: str = ""  # the container's state and last log lines (``state_and_logs``)


def wait_ready(
    running: RunningContainer,
    url: str,
    *,
    deadline: float,
    explain: Callable[[NotReady], SandboxError],
    status: int = 200,
) -> None:
    """Poll ``GET url`` until it answers ``status``, with backoff, until ``deadline`` (monotonic).

    The container's state is checked between polls, so one that stops meanwhile fails at once
    instead of at the deadline. Every failure is raised as ``explain(why)``.
    """
    container = running.container
    begun = time.monotonic()
    delay = _FIRST_DELAY
    last = "no answer yet"
    with httpx.Client(trust_env=False) as http:
        while True:
            remaining = deadline - time.monotonic()
            try:
                answer = http.get(url, timeout=httpx.Timeout(max(min(remaining, 10.0), 0.5), connect=2.0))
                if answer.status_code == status:
                    return
                last = f"answered {answer.status_code}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            try:
                container.reload()
            except docker.errors.NotFound:
                raise explain(NotReady(running.name, "removed", last, time.monotonic() - begun)) from None
            except _ENGINE_ERRORS as exc:
                # The engine is away (restarting): polled on; once it answers, the container's state tells.
                last = f"{last}; the engine did not answer ({type(exc).__name__})"
            else:
                if container.status not in ("created", "running"):
                    raise explain(
                        NotReady(running.name, "ended", last, time.monotonic() - begun, state_and_logs(container))
                    )
            if time.monotonic() >= deadline:
                waited = time.monotonic() - begun
                raise explain(NotReady(running.name, "deadline", last, waited, state_and_logs(container)))
            time.sleep(max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * _BACKOFF, _MAX_DELAY)


class Containers:
    """The containers one provider runs on its environment host, labelled as its owner's.

    ``kind`` names them in messages ("sandbox", "VM sandbox"); ``serial_prefix`` goes before the
    serial number in their names; ``stop_timeout`` seconds pass between SIGTERM and SIGKILL.
    """

    def __init__(
        self,
        host: EngineHost,
        owner: Owner,
        *,
        kind: str = "sandbox",
        serial_prefix: str = "",
        stop_timeout: float = 0.0,
        client: docker.DockerClient | None = None,
    ) -> None:
        self.host = host
        self.owner = owner
        self.kind = kind
        self.stop_timeout = stop_timeout
        self.client: docker.DockerClient = client or host.connect()
        self.ports = PortAccess(host)
        self._serial_prefix = serial_prefix
        self._serial = itertools.count(1)

    def start(
        self, args: Mapping[str, Any], *, ports: Iterable[int], refused: str, port_kind: str = "port"
    ) -> RunningContainer:
        """Create and start a container, its ``ports`` published and read back.

        ``args`` are ``containers.create``'s keyword arguments but for the name and the ports;
        ``refused`` completes the message of an engine that refuses ("... refused to start a vm
        sandbox"). On any failure, Ctrl-C included, what was made is removed before raising.
        """
        name = container_name(self.owner.run_id, self.owner.worker_id, f"{self._serial_prefix}{next(self._serial)}")
        published = list(ports)
        container = self.launch(args, name=name, ports=published, refused=refused)
        forwards: list[Forward] = []
        try:
            addresses = self.ports.addresses(container, published, forwards, what=port_kind)
        except BaseException:
            for forward in forwards:
                forward.close()
            self._remove(container, name, quiet=True)
            raise
        return RunningContainer(container=container, name=name, addresses=addresses, forwards=forwards)

    def launch(self, args: Mapping[str, Any], *, name: str, ports: Iterable[int], refused: str) -> Any:
        """Create and start the container ``name``, ``ports`` published on the host's publish address
        (the engine picks the host ports), without reading them back: ``start`` does, a shared service
        (``services/pool.py``) reads them when it reaches the container. The engine's refusal or silence
        is a :class:`SandboxError`; on any failure, Ctrl-C included, what was made is removed first."""
        container = None
        try:
            try:
                container = self.client.containers.create(
                    **args, name=name, ports=self.ports.bindings(ports), detach=True
                )
                container.start()
                container.reload()
            except docker.errors.APIError as exc:
                raise SandboxError(
                    f"the engine at {self.host.display} refused to start {refused}: {exc.explanation or exc}"
                ) from None
            except _ENGINE_ERRORS as exc:  # no answer at all: the engine is down or restarting
                raise SandboxError(
                    f"the engine at {self.host.display} did not answer while starting {refused}: {exc}"
                ) from None
        except BaseException:
            self._remove(container, name, quiet=True)
            raise
        return container

    @contextlib.contextmanager
    def removed_on_failure(self, running: RunningContainer) -> Iterator[RunningContainer]:
        """Remove ``running`` when the block fails (Ctrl-C included): it never reaches its test."""
        try:
            yield running
        except BaseException:
            self.remove(running, quiet=True)
            raise

    def remove(self, running: RunningContainer, *, quiet: bool = False) -> None:
        """Close its forwards and remove the container (and its anonymous volumes); a gone one is fine.

        ``quiet`` logs a failure instead of raising it (clean-up on the way out of an error).
        """
        for forward in running.forwards:
            forward.close()
        self._remove(running.container, running.name, quiet=quiet)

    def _remove(self, container: Any, name: str, *, quiet: bool) -> None:
        remove_container(
            self.client,
            container,
            name,
            host=self.host,
            run_id=self.owner.run_id,
            kind=self.kind,
            stop_timeout=self.stop_timeout,
            quiet=quiet,
        )

    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        """Remove the run's containers on this engine (of one process, when ``pid`` is given); never raises.

        An engine that answered before and does not now is restarting, as far as this process can tell:
        its stopped containers are removed once it answers again (at most ``ENGINE_RETURN_S`` later)."""
        deadline = time.monotonic() + ENGINE_RETURN_S
        while True:
            try:
                return sweep_run(self.client, run_id, pid=pid)
            except _ENGINE_ERRORS as exc:
                if not is_unreachable(exc) or not engine_back(self.client, deadline - time.monotonic()):
                    return 0

    def close(self) -> None:
        self.ports.close()
        with contextlib.suppress(Exception):
            self.client.close()


class ContainerBackedSandbox(Sandbox):
    """A sandbox that is one container: alive, logs, lost and stop are answered by that container."""

    def __init__(self, containers: Containers, running: RunningContainer, *, task_key: str) -> None:
        self._containers = containers
        self._running = running
        self.task_key = task_key
        self._stopped = False

    @property
    def name(self) -> str:
        return self._running.name

    @property
    def container_id(self) -> str:
        return self._running.id

    def alive(self) -> bool:
        # The container's PID 1 ends when what it runs ends (the desktop's session, QEMU).
        return not self._stopped and self._running.running()

    def logs(self, tail: int = 50) -> str:
        return self._running.logs(tail)

    def lost(self, what: str) -> SandboxLost:
        """A :class:`SandboxLost` for this sandbox, with its state and last log lines."""
        return SandboxLost(f"sandbox {self.name} was lost ({what}){self._running.state_and_logs()}")

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        self._containers.remove(self._running)

    def mark_kept(self, mark: str) -> str:
        """Rename the container to ``<name><mark>`` (labels cannot change once a container exists)."""
        new_name = self._running.name + mark
        try:
            self._running.container.rename(new_name)
        except _ENGINE_ERRORS as exc:
            raise SandboxError(f"could not mark sandbox {self.name} as kept: {exc}") from None
        self._running.name = new_name
        return new_name


def remove_container(
    client: docker.DockerClient,
    container: Any,
    name: str,
    *,
    host: EngineHost,
    run_id: str,
    kind: str = "sandbox",
    stop_timeout: float = 0.0,
    quiet: bool = False,
) -> None:
    """Remove a sandbox's container (and its anonymous volumes); a gone container is fine.

    ``container`` may be None when creation was cut short: it is then looked up by ``name``.
    ``quiet`` logs a failure instead of raising it (clean-up on the way out of an error).
    """
    deadline = time.monotonic() + ENGINE_RETURN_S
    while True:
        with held_interrupts():
            try:
                target = container if container is not None else client.containers.get(name)
                if stop_timeout > 0:
                    with contextlib.suppress(docker.errors.APIError):
                        target.stop(timeout=max(1, round(stop_timeout)))
                target.remove(force=True, v=True)
                return
            except docker.errors.NotFound:
                return
            except _ENGINE_ERRORS as exc:
                error = exc
        # An engine restarting: its containers stop with it and stay until removed, so the removal is
        # tried again once it answers (an interrupt is not held during this wait). A daemon that is still
        # shutting down may answer a ping and then be gone: tried again until the deadline.
        if not is_unreachable(error) or not engine_back(client, deadline - time.monotonic()):
            break
    if quiet:
        log.warning("could not remove %s %s: %s", kind, name, error)
        return
    raise SandboxError(
        f"could not remove {kind} {name} on {host.display} ({error}); "
        f"`pytest-osworld cleanup --run-id {run_id}` removes what is left of this run"
    ) from None


def container_logs(container: Any, tail: int) -> str:
    """The container's last ``tail`` log lines; empty when the engine cannot give them."""
    try:
        text: str = container.logs(stdout=True, stderr=True, tail=tail).decode("utf-8", "replace")
    except _ENGINE_ERRORS:
        return ""
    return text.rstrip()


def state_and_logs(container: Any) -> str:
    """`` (status exited, exit code 3); last log lines:\\n...`` for an error message about ``container``."""
    state = (container.attrs or {}).get("State", {}) if container is not None else {}
    bits = []
    if state.get("Status"):
        bits.append(f"status {state['Status']}")
    if state.get("Status") in ("exited", "dead"):
        bits.append(f"exit code {state.get('ExitCode')}")
    if state.get("OOMKilled"):
        bits.append("killed for using more memory than its limit")
    if state.get("Error"):
        bits.append(str(state["Error"]))
    text = f" ({', '.join(bits)})" if bits else ""
    logs = container_logs(container, LOG_LINES) if container is not None else ""
    if logs:
        text += f"; last log lines:\n{logs}"
    return text
