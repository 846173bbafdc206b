"""One shared service's container: its image, its start, where this process reaches it, its readiness
and health probes, a command run in it (bootstrap, reset), its reset, and the removal of a run's
service containers at its end.

Functions over the engine's client and the project's container lifecycle (``sandbox/containers.py``);
:class:`~pytest_osworld.services.pool.ServicePool` decides when (under the run's locks, once per run).
Any failure is a :class:`ServiceError`: the task that needs the service is masked ``service_error``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import docker
import docker.errors
import httpx
import requests.exceptions

from pytest_osworld.errors import OsworldError
from pytest_osworld.locks import lock_dir
from pytest_osworld.sandbox import (
    LABEL_MANAGED,
    LABEL_ROLE,
    LABEL_RUN_ID,
    ROLE_SERVICE,
    Containers,
    EngineHost,
    NotReady,
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
from pytest_osworld.services.declaration import Service

log = logging.getLogger("pytest_osworld.services")

ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)


class ServiceError(OsworldError):
    """A service a task needs is down (or died during it): the task is masked, never scored."""

    reason = "service_error"


@dataclass
class AttachedService:
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


def service_image(client: docker.DockerClient, host: EngineHost, service: Service) -> str:
    """The id of the service's image on the engine: the desktop image (built when missing) or its own."""
    if service.build == "desktop":
        try:
            return ensure_desktop_image(client, host, lambda line: log.info("%s", line))
        except (OsworldError, SandboxError) as exc:
            raise ServiceError(f"service {service.name}: its image could not be built: {exc}") from None
    image = find_image(client, service.image_ref())
    if image is None:
        raise ServiceError(
            f"service {service.name}: image {service.image_ref()} is not on the engine at {host.display} "
            "and no registry is reached: build or `docker load` it there, or fix services."
            f"{service.name}.image in the profile"
        )
    return str(image.id)


def start(
    containers: Containers,
    service: Service,
    network: str,
    *,
    name: str,
    labels: dict[str, str],
    suffix: str,
    token: str | None,
) -> AttachedService:
    """Start the service's container on the run's network, reachable there by its hostnames; it is
    ready when this returns, or down (the health check that follows restarts it)."""
    client = containers.client
    image = service_image(client, containers.host, service)
    environment = dict(service.env)
    # pass_env's values are read here only, never kept: the definition names them.
    environment.update({n: os.environ[n] for n in service.pass_env if n in os.environ})
    if service.token_env is not None:
        environment[service.token_env] = token or ""
    args: dict[str, Any] = {
        "image": image,
        "labels": labels,
        "environment": environment,
        "network": network,
        "networking_config": {network: client.api.create_endpoint_config(aliases=service.hostnames(suffix))},
    }
    if service.entrypoint is not None:
        args["entrypoint"] = service.entrypoint
    if service.command is not None:
        args["command"] = service.command
    started = time.monotonic()
    try:
        container = containers.launch(args, name=name, ports=service.ports, refused="its container")
    except SandboxError as exc:
        raise ServiceError(f"service {service.name}: {exc}") from None
    attached = reach(containers, service, container)
    # One that does not get ready is down: the health check that follows restarts it once more,
    # and words the error when that fails too.
    with contextlib.suppress(ServiceError):
        wait_until_ready(attached, started)
        log.info("service %s started as %s", service.name, name)
    return attached


def reach(containers: Containers, service: Service, container: Any) -> AttachedService:
    """Where this process reaches the container's ports; none while it is not running (it is then
    down, and the health check restarts it)."""
    container.reload()
    forwards: list[Forward] = []
    addresses: dict[int, tuple[str, int]] = {}
    if container.status == "running":
        try:
            addresses = containers.ports.addresses(container, service.ports, forwards, what="service port")
        except SandboxError:
            addresses = {}  # it ended meanwhile: down, as above
    name = str((container.attrs or {}).get("Name") or container.name).lstrip("/")
    return AttachedService(
        service, RunningContainer(container=container, name=name, addresses=addresses, forwards=forwards)
    )


def wait_until_ready(attached: AttachedService, started: float) -> None:
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


def probe_problem(http: httpx.Client, attached: AttachedService) -> str | None:
    """None when the service answers its probe now; else what is wrong (one quick request)."""
    probe = attached.service.readiness
    url = attached.probe_url
    if not attached.running.running() or url is None:
        return f"its container {attached.running.name} is not running{state_and_logs(attached.running.container)}"
    try:
        answer = http.get(url, timeout=probe.check_timeout)
    except httpx.HTTPError as exc:
        return f"GET {probe.path} failed ({type(exc).__name__})"
    if answer.status_code != probe.status:
        return f"GET {probe.path} answered {answer.status_code}, not {probe.status}"
    return None


def run_command(client: docker.DockerClient, attached: AttachedService, command: list[str], *, what: str) -> None:
    """Run ``command`` in the service's container (docker exec), bounded by its readiness deadline;
    :class:`ServiceError` naming the exit code and the last lines of output when it fails."""
    service = attached.service
    api = client.api
    said = f"its {what} ({command[0]})"
    try:
        exec_id = api.exec_create(attached.running.id, command)["Id"]
    except ENGINE_ERRORS as exc:
        raise ServiceError(f"service {service.name}: {said} could not be started: {exc}") from None
    output: list[bytes] = []
    failed: list[BaseException] = []

    def read() -> None:
        try:
            for chunk in api.exec_start(exec_id, stream=True):
                output.append(chunk)
        except (*ENGINE_ERRORS, OSError) as exc:  # also a quiet command outlasting the client's read timeout
            failed.append(exc)

    reader = threading.Thread(target=read, name=f"service-{service.name}-{what}", daemon=True)
    reader.start()
    deadline = time.monotonic() + service.readiness.deadline
    while True:
        try:
            info = api.exec_inspect(exec_id)
        except ENGINE_ERRORS as exc:
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


def reset(client: docker.DockerClient, attached: AttachedService, token: str | None) -> None:
    """The service's reset before a holder's turn: its command, or its HTTP call (``{token}`` in a
    header is the run's token)."""
    spec = attached.service.reset
    if spec is not None and spec.command is not None:
        run_command(client, attached, spec.command, what="reset")
        return
    if spec is None or spec.http is None:
        return
    call = spec.http
    base = attached.url(call.port or attached.service.probe_port)
    if base is None:
        raise ServiceError(f"service {attached.service.name}: port {call.port} of its reset is not published")
    url = base + call.path
    try:
        with httpx.Client(trust_env=False) as http:
            headers = {name: value.replace("{token}", token or "") for name, value in call.headers.items()}
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
        with contextlib.closing(client), contextlib.suppress(*ENGINE_ERRORS):
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
