"""A run's shared services on one Docker engine: started once, found again by labels, checked, held.

Each pytest process (an xdist worker, or the plain session) has one :class:`ServicePool`. The first
process that needs a service starts it under a machine-wide lock; the others find the same container
by its labels (run id, role ``service``, service name) and attach. Services and the sandboxes of
tasks that need them share one Docker network per run and engine, where each service answers to its
hostnames (``<name>.<suffix>`` and its aliases). Ports are published on the host's loopback only, for
the readiness and health probes of this process (through SSH forwards on an ``ssh://`` engine).

Before a task: each service it needs is health-checked (one quick probe); a service that does not
answer is restarted (``service_restarts`` times) and, if it still does not, the task is masked
``service_error`` (:class:`ServiceError`). An exclusive service is held by one task at a time across
every worker (:class:`~pytest_osworld.locks.FairLock`) and reset before each holder. After the
task, :meth:`TaskServices.problem` says whether a service died meanwhile.

The pool never removes a service: other workers may use it. The run's owner does at its end
(:func:`remove_services`), and so does the leftover sweep after a crash (role ``service``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import docker.errors
import httpx
import requests.exceptions

from pytest_osworld.errors import OsworldError
from pytest_osworld.locks import FairLock, file_lock, lock_dir
from pytest_osworld.record import ServiceRecord
from pytest_osworld.sandbox import (
    LABEL_MANAGED,
    LABEL_ROLE,
    LABEL_RUN_ID,
    LABEL_SERVICE,
    ROLE_SERVICE,
    Containers,
    EngineHost,
    NotReady,
    Owner,
    RunningContainer,
    SandboxError,
    find_image,
    remove_container,
    remove_run_networks,
    state_and_logs,
    wait_ready,
)
from pytest_osworld.sandbox.desktop_image import ensure_desktop_image
from pytest_osworld.sandbox.tunnel import Forward
from pytest_osworld.sanitize import remember
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.declaration import Service

log = logging.getLogger("pytest_osworld.services")

_ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)
_NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")


class ServiceError(OsworldError):
    """A service a task needs is down (or died during it): the task is masked, never scored."""

    reason = "service_error"


def state_key(run_id: str, task_key: str) -> str:
    """A task's key in a service's state: URL-safe, as it goes into query strings and cookies unquoted
    (``<run>-<domain>/<id>#r2`` would lose its repeat to a URL fragment). Every other character is
    written ``~XX`` (its hex), ``~`` too, so distinct tasks keep distinct keys."""
    return re.sub(
        r"[^A-Za-z0-9_.-]", lambda m: "".join(f"~{b:02X}" for b in m.group(0).encode()), f"{run_id}-{task_key}"
    )


def network_name(run_id: str) -> str:
    return f"pytest-osworld-{_NAME_UNSAFE.sub('-', run_id)[:40]}-services"


def _container_name(run_id: str, service: str) -> str:
    return f"pytest-osworld-{_NAME_UNSAFE.sub('-', run_id)[:40]}-svc-{service}"


def run_token(folder: Path, service: str) -> str:
    """A service's secret token for the run: ``OSWORLD_<NAME>_TOKEN`` when set, else a random value made
    by the first process that asks and kept (mode 0600) in the run's lock folder, so every worker of the
    run gets the same one. It is never a constant of the code, and goes nowhere but the container's
    environment, reset headers and ``{SERVICE_TOKEN:name}``."""
    given = os.environ.get(f"OSWORLD_{service.upper().replace('-', '_')}_TOKEN")
    if given:
        return given
    path = folder / f"token-{service}"
    if not path.exists():
        draft = folder / f".token-{service}-{secrets.token_hex(6)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(20))
        try:
            os.link(draft, path)  # atomic: of two processes racing here, the first one's value stands
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text(encoding="ascii").strip()


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass
class _Attached:
    """A service's container as this process reaches it."""

    service: Service
    running: RunningContainer

    @property
    def probe_url(self) -> str | None:
        base = self.url(self.service.probe_port)
        return None if base is None else base + self.service.readiness.path

    def url(self, port: int) -> str | None:
        """``http://ip:port`` of a container port from here; None while it is not published (not running)."""
        if port not in self.running.addresses:
            return None
        ip, host_port = self.running.addresses[port]
        return f"http://{ip}:{host_port}"


@dataclass
class TaskServices:
    """The services one task uses, for its whole life: the network its sandbox joins, its records."""

    network: str
    records: dict[str, ServiceRecord]
    _pool: ServicePool
    _names: list[str] = field(default_factory=list)
    # How the task reaches each service (sandbox hostnames, this process's URLs, its state keys).
    access: dict[str, ServiceAccess] = field(default_factory=dict)

    def problem(self) -> str | None:
        """Why a service of this task is down now (it died during the task), or None when all answer."""
        return self._pool.problem(self._names)


class ServicePool:
    """The services of one run on one engine, as one pytest process uses them."""

    def __init__(
        self,
        services: Mapping[str, Service],
        *,
        host: EngineHost,
        owner: Owner,
        suffix: str,
        restarts: int = 1,
        client: docker.DockerClient | None = None,
    ) -> None:
        self.services = dict(services)
        self.host = host
        self.owner = owner
        self.suffix = suffix
        self.restarts = restarts
        # The one container lifecycle of the project (``sandbox/containers.py``): start, ports, removal.
        self._containers = Containers(host, owner, kind="service", client=client)
        self.client: docker.DockerClient = self._containers.client
        self._ports = self._containers.ports
        self._attached: dict[str, _Attached] = {}
        self._network: str | None = None
        self._locks = lock_dir(owner.run_id)
        self._bootstrapped: set[str] = set()  # container ids whose bootstrap this process knows ran
        self._http: httpx.Client | None = None  # one for every probe: making a client costs more than a probe

    # --- the network
    def network(self) -> str:
        """The run's services' network on this engine, created by the first process that needs it."""
        if self._network is not None:
            return self._network
        name = network_name(self.owner.run_id)
        with self._start_lock("network"):
            try:
                found = self.client.networks.list(names=[name])
                if not any(n.name == name for n in found):
                    self.client.networks.create(
                        name,
                        driver="bridge",
                        labels={**self.owner.labels(), LABEL_ROLE: ROLE_SERVICE},
                        check_duplicate=True,
                    )
            except _ENGINE_ERRORS as exc:
                raise ServiceError(
                    f"could not create the services' network {name} on {self.host.display}: {exc}"
                ) from None
        self._network = name
        return name

    # --- one service
    def _start_lock(self, what: str) -> contextlib.AbstractContextManager[None]:
        engine = _NAME_UNSAFE.sub("-", self.host.display)[-40:]
        return file_lock(f"{self._locks.name}/start-{what}-{engine}")

    def _find(self, name: str) -> Any | None:
        labels = [
            f"{LABEL_MANAGED}=1",
            f"{LABEL_RUN_ID}={self.owner.run_id}",
            f"{LABEL_ROLE}={ROLE_SERVICE}",
            f"{LABEL_SERVICE}={name}",
        ]
        found = self.client.containers.list(all=True, filters={"label": labels})
        return found[0] if found else None

    def attach(self, name: str) -> _Attached:
        """The service, started when no process of the run has started it yet; ready when this returns."""
        if name in self._attached:
            return self._attached[name]
        service = self.services[name]
        network = self.network()
        with self._start_lock(f"service-{name}"):
            try:
                container = self._find(name)
                attached = self._start(service, network) if container is None else self._reach(service, container)
            except _ENGINE_ERRORS as exc:
                raise ServiceError(f"service {name}: the engine at {self.host.display} failed: {exc}") from None
        self._attached[name] = attached
        return attached

    def _image(self, service: Service) -> str:
        if service.build == "desktop":
            try:
                return ensure_desktop_image(self.client, self.host, lambda line: log.info("%s", line))
            except (OsworldError, SandboxError) as exc:
                raise ServiceError(f"service {service.name}: its image could not be built: {exc}") from None
        image = find_image(self.client, service.image_ref())
        if image is None:
            raise ServiceError(
                f"service {service.name}: image {service.image_ref()} is not on the engine at {self.host.display} "
                "and no registry is reached: build or `docker load` it there, or fix services."
                f"{service.name}.image in the profile"
            )
        return str(image.id)

    def _start(self, service: Service, network: str) -> _Attached:
        image = self._image(service)
        name = _container_name(self.owner.run_id, service.name)
        labels = {**self.owner.labels(), LABEL_ROLE: ROLE_SERVICE, LABEL_SERVICE: service.name}
        environment = dict(service.env)
        # pass_env's values are read here only, never kept: the definition names them.
        environment.update({n: os.environ[n] for n in service.pass_env if n in os.environ})
        if service.token_env is not None:
            environment[service.token_env] = self.token(service) or ""
        args: dict[str, Any] = {
            "image": image,
            "labels": labels,
            "environment": environment,
            "network": network,
            "networking_config": {
                network: self.client.api.create_endpoint_config(aliases=service.hostnames(self.suffix))
            },
        }
        if service.entrypoint is not None:
            args["entrypoint"] = service.entrypoint
        if service.command is not None:
            args["command"] = service.command
        started = time.monotonic()
        try:
            container = self._containers.launch(args, name=name, ports=service.ports, refused="its container")
        except SandboxError as exc:
            raise ServiceError(f"service {service.name}: {exc}") from None
        attached = self._reach(service, container)
        # One that does not get ready is down: the health check that follows restarts it once more,
        # and words the error when that fails too.
        with contextlib.suppress(ServiceError):
            self._wait_ready(attached, started)
            log.info("service %s started as %s", service.name, name)
        return attached

    def _reach(self, service: Service, container: Any) -> _Attached:
        """Where this process reaches the container's ports; none while it is not running (it is then
        down, and the health check restarts it)."""
        container.reload()
        forwards: list[Forward] = []
        addresses: dict[int, tuple[str, int]] = {}
        if container.status == "running":
            try:
                addresses = self._ports.addresses(container, service.ports, forwards, what="service port")
            except SandboxError:
                addresses = {}  # it ended meanwhile: down, as above
        name = str((container.attrs or {}).get("Name") or container.name).lstrip("/")
        return _Attached(
            service, RunningContainer(container=container, name=name, addresses=addresses, forwards=forwards)
        )

    def _wait_ready(self, attached: _Attached, started: float) -> None:
        """Wait until the service answers its probe; :class:`ServiceError` when it does not in time."""
        service = attached.service
        probe = service.readiness

        def explain(why: NotReady) -> SandboxError:
            if why.cause == "deadline":
                return SandboxError(
                    f"service {service.name} did not answer GET {probe.path} on port {service.probe_port} with "
                    f"{probe.status} within {probe.deadline:g} s (last: {why.last}){why.state}"
                )
            return SandboxError(f"service {service.name} stopped while starting{why.state or ' (removed)'}")

        url = attached.probe_url
        if url is None:
            raise ServiceError(f"service {service.name} is not running{state_and_logs(attached.running.container)}")
        try:
            wait_ready(attached.running, url, deadline=started + probe.deadline, explain=explain, status=probe.status)
        except SandboxError as exc:
            raise ServiceError(str(exc)) from None

    # --- health
    def _answers(self, attached: _Attached) -> str | None:
        """None when the service answers its probe now; else what is wrong (one quick request)."""
        probe = attached.service.readiness
        url = attached.probe_url
        if not attached.running.running() or url is None:
            return f"its container {attached.running.name} is not running{state_and_logs(attached.running.container)}"
        if self._http is None:
            self._http = httpx.Client(trust_env=False)  # straight to loopback: no proxy
        try:
            answer = self._http.get(url, timeout=probe.check_timeout)
        except httpx.HTTPError as exc:
            return f"GET {probe.path} failed ({type(exc).__name__})"
        if answer.status_code != probe.status:
            return f"GET {probe.path} answered {answer.status_code}, not {probe.status}"
        return None

    def healthy(self, name: str) -> tuple[_Attached, bool]:
        """The service, answering its probe (restarted when it did not) and bootstrapped. Returns it and
        whether it was restarted; raises :class:`ServiceError` when it still does not answer."""
        attached, restarted = self._answering(name)
        self._bootstrap(attached)
        return attached, restarted

    def _answering(self, name: str) -> tuple[_Attached, bool]:
        attached = self.attach(name)
        problem = self._answers(attached)
        if problem is None:
            return attached, False
        restarted = False
        for _ in range(self.restarts):
            with self._start_lock(f"service-{name}"):
                # Another worker may have restarted it while this one waited for the lock.
                attached = self._refresh(attached)
                if self._answers(attached) is None:
                    return attached, restarted
                log.warning("service %s is down (%s); restarting it", name, problem)
                attached = self._restart(attached)
                restarted = True
            problem = self._answers(attached)
            if problem is None:
                return attached, True
        raise ServiceError(
            f"service {name} is down: {problem}"
            + (f"; still down after {self.restarts} restart(s)" if self.restarts else "; service_restarts is 0")
        )

    def _bootstrap(self, attached: _Attached) -> None:
        """Run the service's ``bootstrap`` once per container, after it first answers: the first process
        to get here runs it under the start lock and leaves a marker in the run's lock folder. A failed
        one leaves none: the next task tries again (a restart keeps the container, and what it made)."""
        command = attached.service.bootstrap
        if command is None or attached.running.id in self._bootstrapped:
            return
        name = attached.service.name
        marker = self._locks / f"bootstrapped-{name}-{attached.running.id[:12]}"
        with self._start_lock(f"service-{name}"):
            if not marker.exists():
                self._exec(attached, command, what="bootstrap")
                log.info("service %s: bootstrap ran", name)
                marker.touch()
        self._bootstrapped.add(attached.running.id)

    def _exec(self, attached: _Attached, command: list[str], *, what: str) -> None:
        """Run ``command`` in the service's container (docker exec), bounded by its readiness deadline;
        :class:`ServiceError` naming the exit code and the last lines of output when it fails."""
        service = attached.service
        api = self.client.api
        said = f"its {what} ({command[0]})"
        try:
            exec_id = api.exec_create(attached.running.id, command)["Id"]
        except _ENGINE_ERRORS as exc:
            raise ServiceError(f"service {service.name}: {said} could not be started: {exc}") from None
        output: list[bytes] = []
        failed: list[BaseException] = []

        def read() -> None:
            try:
                for chunk in api.exec_start(exec_id, stream=True):
                    output.append(chunk)
            except (*_ENGINE_ERRORS, OSError) as exc:  # also a quiet command outlasting the client's read timeout
                failed.append(exc)

        reader = threading.Thread(target=read, name=f"service-{service.name}-{what}", daemon=True)
        reader.start()
        deadline = time.monotonic() + service.readiness.deadline
        while True:
            try:
                info = api.exec_inspect(exec_id)
            except _ENGINE_ERRORS as exc:
                raise ServiceError(f"service {service.name}: {said}: the engine failed: {exc}") from None
            code = info.get("ExitCode")
            if code is not None and not info.get("Running"):
                break
            if not reader.is_alive() and failed and not info.get("Running"):
                raise ServiceError(f"service {service.name}: {said} could not be started: {failed[0]}")
            if time.monotonic() > deadline:
                raise ServiceError(
                    f"service {service.name}: {said} did not end within {service.readiness.deadline:g} s "
                    "(readiness.deadline)"
                )
            reader.join(0.5)
            if not reader.is_alive():
                time.sleep(0.2)  # the poll interval once the output has ended (the exit code follows)
        reader.join(1.0)
        if code != 0:
            lines = b"".join(output).decode("utf-8", "replace").strip().splitlines()[-5:]
            tail = ("; last output: " + " | ".join(lines))[:600] if lines else ""
            raise ServiceError(f"service {service.name}: {said} exited {code}{tail}")

    def _refresh(self, attached: _Attached) -> _Attached:
        """Read its published ports again (a restart may have moved them)."""
        for forward in attached.running.forwards:
            forward.close()
        try:
            attached = self._reach(attached.service, attached.running.container)
        except (ServiceError, *_ENGINE_ERRORS):
            return attached
        self._attached[attached.service.name] = attached
        return attached

    def _restart(self, attached: _Attached) -> _Attached:
        started = time.monotonic()
        try:
            attached.running.container.restart(timeout=1)
        except _ENGINE_ERRORS as exc:
            raise ServiceError(f"service {attached.service.name} could not be restarted: {exc}") from None
        attached = self._refresh(attached)
        with contextlib.suppress(ServiceError):
            self._wait_ready(attached, started)
        return self._refresh(attached)

    def problem(self, names: list[str]) -> str | None:
        """Why one of ``names`` is down now (named), or None. Never restarts: for the check after a task."""
        for name in names:
            attached = self._attached.get(name)
            if attached is None:
                continue
            if self._answers(attached) is not None:
                attached = self._refresh(attached)  # a restart by another worker moved its ports
            problem = self._answers(attached)
            if problem is not None:
                return f"service {name} went down during the task: {problem}"
        return None

    # --- a task's use
    @contextlib.contextmanager
    def for_task(
        self, names: list[str], task_key: str, *, records: dict[str, ServiceRecord] | None = None
    ) -> Iterator[TaskServices]:
        """Hold what a task needs for its whole life: exclusive services in turn (names in order, so two
        tasks never wait for each other), each checked healthy and reset before the task begins.

        ``records`` (the caller's) is filled as each service is taken, so a failure still shows the rest.
        """
        records = {} if records is None else records
        access: dict[str, ServiceAccess] = {}
        with contextlib.ExitStack() as stack:
            for name in sorted(names):
                service = self.services[name]
                waited, held_at = 0.0, None
                if service.exclusive:
                    held = stack.enter_context(FairLock(self._locks / f"hold-{name}.queue").hold())
                    waited, held_at = held.waited_seconds, _now_iso()
                attached, restarted = self.healthy(name)
                if service.exclusive:
                    self._reset(attached)
                key = (
                    state_key(self.owner.run_id, task_key)
                    if service.reset is not None and service.reset.state_key is not None
                    else None
                )
                records[name] = ServiceRecord(
                    id=attached.running.id,
                    image=service.image_ref(),
                    exclusive=service.exclusive,
                    waited_seconds=waited,
                    restarted=restarted,
                    held_at=held_at,
                    state_key=key,
                )
                access[name] = self.access(attached, key)
            yield TaskServices(network=self.network(), records=records, _pool=self, _names=sorted(names), access=access)

    def token(self, service: Service) -> str | None:
        """The run's secret token of a service with ``token_env`` (None without); every process that
        learns it remembers it, so no record, report or log line of this process shows it."""
        if service.token_env is None:
            return None
        value = run_token(self._locks, service.name)
        remember([value])
        return value

    def access(self, attached: _Attached, state_key: str | None = None) -> ServiceAccess:
        """How a task reaches an attached service: its hostname inside sandboxes, its URLs from here."""
        service = attached.service
        urls = {port: url for port in service.ports if (url := attached.url(port)) is not None}
        return ServiceAccess(
            name=service.name,
            hostname=service.hostnames(self.suffix)[0],
            ports=tuple(service.ports),
            state_key=state_key,
            host_urls=urls,
            token=self.token(service),
        )

    def _reset(self, attached: _Attached) -> None:
        reset = attached.service.reset
        if reset is not None and reset.command is not None:
            self._exec(attached, reset.command, what="reset")
            return
        if reset is None or reset.http is None:
            return
        call = reset.http
        base = attached.url(call.port or attached.service.probe_port)
        if base is None:
            raise ServiceError(f"service {attached.service.name}: port {call.port} of its reset is not published")
        url = base + call.path
        try:
            with httpx.Client(trust_env=False) as http:
                token = self.token(attached.service) or ""
                headers = {name: value.replace("{token}", token) for name, value in call.headers.items()}
                answer = http.request(call.method, url, headers=headers, timeout=attached.service.readiness.deadline)
        except httpx.HTTPError as exc:
            raise ServiceError(
                f"service {attached.service.name}: its reset {call.method} {call.path} failed ({exc})"
            ) from None
        if answer.status_code != call.status:
            raise ServiceError(
                f"service {attached.service.name}: its reset {call.method} {call.path} answered "
                f"{answer.status_code}, not {call.status}"
            )

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        for attached in self._attached.values():
            for forward in attached.running.forwards:
                forward.close()
        self._containers.close()


def remove_services(pool: list[EngineHost], run_id: str) -> int:
    """Remove a run's service containers and its services' network on every engine; returns how many
    containers. Never raises (the end of a run, or the way out of one)."""
    removed = 0
    labels = [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}", f"{LABEL_ROLE}={ROLE_SERVICE}"]
    for host in pool:
        try:
            client = host.connect(timeout=20)
        except Exception:  # noqa: BLE001 - an engine that does not answer has nothing to remove here
            continue
        with contextlib.closing(client), contextlib.suppress(*_ENGINE_ERRORS):
            for container in client.containers.list(all=True, filters={"label": labels}):
                try:
                    remove_container(client, container, container.name, host=host, run_id=run_id, kind="service")
                except SandboxError as exc:
                    log.warning("%s", exc)
                    continue
                removed += 1
            remove_run_networks(client, run_id)
    with contextlib.suppress(OSError):
        folder = lock_dir(run_id)
        for path in folder.iterdir():
            path.unlink()
        folder.rmdir()
    return removed
