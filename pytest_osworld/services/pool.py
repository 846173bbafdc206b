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

What one service's container does (start, probes, commands, reset, removal) is ``container.py``; the
run's names and tokens are ``naming.py``. The pool decides when, under the run's locks.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import docker
import httpx

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
    Owner,
)
from pytest_osworld.sanitize import remember
from pytest_osworld.services import container
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.container import ENGINE_ERRORS, AttachedService, ServiceError, remove_services
from pytest_osworld.services.declaration import Service
from pytest_osworld.services.naming import NAME_UNSAFE, container_name, network_name, run_token, state_key

# What the services' callers take from here: the pool, a task's services, its error and the run's end.
__all__ = ["ServiceError", "ServicePool", "TaskServices", "remove_services"]

log = logging.getLogger("pytest_osworld.services")


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


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
        self._attached: dict[str, AttachedService] = {}
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
            except ENGINE_ERRORS as exc:
                raise ServiceError(
                    f"could not create the services' network {name} on {self.host.display}: {exc}"
                ) from None
        self._network = name
        return name

    # --- one service
    def _start_lock(self, what: str) -> contextlib.AbstractContextManager[None]:
        engine = NAME_UNSAFE.sub("-", self.host.display)[-40:]
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

    def attach(self, name: str) -> AttachedService:
        """The service, started when no process of the run has started it yet; ready when this returns."""
        if name in self._attached:
            return self._attached[name]
        service = self.services[name]
        network = self.network()
        with self._start_lock(f"service-{name}"):
            try:
                found = self._find(name)
                attached = (
                    self._start(service, network)
                    if found is None
                    else container.reach(self._containers, service, found)
                )
            except ENGINE_ERRORS as exc:
                raise ServiceError(f"service {name}: the engine at {self.host.display} failed: {exc}") from None
        self._attached[name] = attached
        return attached

    # --- health
    def _start(self, service: Service, network: str) -> AttachedService:
        return container.start(
            self._containers,
            service,
            network,
            name=container_name(self.owner.run_id, service.name),
            labels={**self.owner.labels(), LABEL_ROLE: ROLE_SERVICE, LABEL_SERVICE: service.name},
            suffix=self.suffix,
            token=self.token(service),
        )

    def _answers(self, attached: AttachedService) -> str | None:
        """None when the service answers its probe now; else what is wrong (one quick request)."""
        if self._http is None:
            self._http = httpx.Client(trust_env=False)  # straight to loopback: no proxy
        return container.probe_problem(self._http, attached)

    def healthy(self, name: str) -> tuple[AttachedService, bool]:
        """The service, answering its probe (restarted when it did not) and bootstrapped. Returns it and
        whether it was restarted; raises :class:`ServiceError` when it still does not answer."""
        attached, restarted = self._answering(name)
        self._bootstrap(attached)
        return attached, restarted

    def _answering(self, name: str) -> tuple[AttachedService, bool]:
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

    def _bootstrap(self, attached: AttachedService) -> None:
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
                container.run_command(self.client, attached, command, what="bootstrap")
                log.info("service %s: bootstrap ran", name)
                marker.touch()
        self._bootstrapped.add(attached.running.id)

    def _refresh(self, attached: AttachedService) -> AttachedService:
        """Read its published ports again (a restart may have moved them)."""
        for forward in attached.running.forwards:
            forward.close()
        try:
            attached = container.reach(self._containers, attached.service, attached.running.container)
        except (ServiceError, *ENGINE_ERRORS):
            return attached
        self._attached[attached.service.name] = attached
        return attached

    def _restart(self, attached: AttachedService) -> AttachedService:
        started = time.monotonic()
        try:
            attached.running.container.restart(timeout=1)
        except ENGINE_ERRORS as exc:
            raise ServiceError(f"service {attached.service.name} could not be restarted: {exc}") from None
        attached = self._refresh(attached)
        with contextlib.suppress(ServiceError):
            container.wait_until_ready(attached, started)
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
                    container.reset(self.client, attached, self.token(attached.service))
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

    def access(self, attached: AttachedService, state_key: str | None = None) -> ServiceAccess:
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

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
        for attached in self._attached.values():
            for forward in attached.running.forwards:
                forward.close()
        self._containers.close()
