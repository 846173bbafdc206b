"""Containers left behind: finding them by label, telling live runs from dead ones, removing them.

A container is a leftover when the run that started it has ended: its owning processes (the run's
and the one that started it, both named by pid and start identity in labels) no longer live on
this host, or it is older than ``sandbox_leftover_age``. Containers of runs on another machine
can only be judged by age. Only containers with the project's labels are ever looked at, and all
of them are: sandboxes, probes, the vm provider's state saves and builds, and shared services alike
(``LABEL_ROLE`` tells them apart).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import docker
import docker.errors
import requests.exceptions

from pytest_osworld.procs import hostname, is_alive
from pytest_osworld.sandbox.base import SandboxConfigError
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.kept import is_kept
from pytest_osworld.sandbox.labels import (
    LABEL_HOSTNAME,
    LABEL_MANAGED,
    LABEL_NODE,
    LABEL_PID,
    LABEL_POOL,
    LABEL_PROCESS_START,
    LABEL_ROLE,
    LABEL_RUN_ID,
    LABEL_RUN_PID,
    LABEL_RUN_PROCESS_START,
    LABEL_TASK,
    LABEL_WORKER,
    ROLE_SERVICE,
)


@dataclass(frozen=True)
class Managed:
    """One container with the project's labels."""

    host: str  # the engine, redacted
    id: str
    name: str
    run_id: str | None
    worker: str | None
    task: str | None
    role: str | None  # a value of labels.ROLES, or None for a container made before roles were labelled
    status: str
    age_seconds: float
    alive_reason: str | None  # why its run counts as alive; None when it is a leftover
    pool: str | None = None  # started ahead by a warm pool (the pool's key): its task label names no task
    node: str | None = None  # the Ray node whose agent started it

    @property
    def leftover(self) -> bool:
        return self.alive_reason is None

    def line(self) -> str:
        run = self.run_id or "?"
        what = f"warm pool {self.pool}" if self.pool else (self.task or self.role or "-")
        node = f" on ray node {self.node}" if self.node else ""
        return (
            f"{self.host} {self.name} ({self.id[:12]}) run {run} worker {self.worker or '-'} {what}{node}, "
            f"{self.status}"
        )


def list_managed(
    client: docker.DockerClient, host: EngineHost, *, max_age: float, run_id: str | None = None
) -> list[Managed]:
    filters = {"label": [f"{LABEL_MANAGED}=1"] + ([f"{LABEL_RUN_ID}={run_id}"] if run_id else [])}
    found = []
    me = hostname()
    now = time.time()
    for container in client.containers.list(all=True, filters=filters, sparse=True):
        attrs = container.attrs
        labels = attrs.get("Labels") or {}
        created = attrs.get("Created")
        age = now - float(created) if isinstance(created, int | float) else _age(created, now)
        names = attrs.get("Names") or [container.id[:12]]
        found.append(
            Managed(
                host=host.display,
                id=container.id,
                name=str(names[0]).lstrip("/"),
                run_id=labels.get(LABEL_RUN_ID),
                worker=labels.get(LABEL_WORKER),
                task=labels.get(LABEL_TASK),
                role=labels.get(LABEL_ROLE),
                status=str(attrs.get("State") or "?"),
                age_seconds=age,
                alive_reason=_alive_reason(labels, age, max_age, me),
                pool=labels.get(LABEL_POOL),
                node=labels.get(LABEL_NODE),
            )
        )
    return found


def _age(created: object, now: float) -> float:
    if isinstance(created, str):
        with contextlib.suppress(ValueError):
            return now - datetime.fromisoformat(created.replace("Z", "+00:00")[:26]).timestamp()
    return 0.0


def _alive_reason(labels: dict[str, str], age: float, max_age: float, me: str) -> str | None:
    if age >= max_age:
        return None
    owner_host = labels.get(LABEL_HOSTNAME)
    if owner_host and owner_host != me:
        return f"started from {owner_host}, younger than the leftover age"
    if not labels.get(LABEL_PID) and not labels.get(LABEL_RUN_PID):
        return "no owner labels, younger than the leftover age"  # another tool's container: judged by age only
    if is_alive(labels.get(LABEL_RUN_PID), labels.get(LABEL_RUN_PROCESS_START)):
        return "its run's process is alive"
    if is_alive(labels.get(LABEL_PID), labels.get(LABEL_PROCESS_START)):
        return "the process that started it is alive"
    return None


def remove_managed(client: docker.DockerClient, containers: Iterable[Managed]) -> list[Managed]:
    """Remove the given containers; returns the ones removed (gone ones count as removed)."""
    removed = []
    for item in containers:
        try:
            client.containers.get(item.id).remove(force=True, v=True)
        except docker.errors.NotFound:
            pass
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            continue
        removed.append(item)
    return removed


# An engine that restarts (a daemon upgrade, a crash its service manager restarts) answers again within
# seconds; what a run must still remove from it is retried that long before it is given up as left behind.
ENGINE_RETURN_S = 30.0


def engine_back(client: docker.DockerClient, limit: float = ENGINE_RETURN_S) -> bool:
    """Wait for an engine that did not answer to answer a ping again, at most ``limit`` s; whether it did."""
    deadline = time.monotonic() + limit
    delay = 0.1
    while time.monotonic() + delay <= deadline:
        time.sleep(delay)  # readiness poll, backing off to once a second; never asked again at once
        delay = min(1.0, delay * 2)
        try:
            client.ping()
            return True
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            continue
    return False


def is_unreachable(exc: BaseException) -> bool:
    """Whether an engine error means the engine did not answer at all (gone or restarting), not a refusal."""
    return isinstance(exc, requests.exceptions.ConnectionError | requests.exceptions.Timeout)


def sweep_run(client: docker.DockerClient, run_id: str, *, pid: int | None = None, services: bool = True) -> int:
    """Remove the containers of one run (of one process of it, when ``pid`` is given); returns how many.

    A process's own sweep leaves the run's shared services alone: the worker that started one is not
    its only user, and the run's owner removes them at its end. The sweep of a whole run takes them
    (unless ``services`` is false: their owner removes and counts them), and the run's networks once
    their containers are gone. A process's own sweep also leaves the sandboxes it kept after failed
    tasks (``kept``): they stay until the run's end.
    """
    labels = [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]
    if pid is not None:
        labels.append(f"{LABEL_PID}={pid}")
    count = 0
    for container in client.containers.list(all=True, filters={"label": labels}, sparse=True):
        is_service = (container.attrs.get("Labels") or {}).get(LABEL_ROLE) == ROLE_SERVICE
        if is_service and (pid is not None or not services):
            continue
        if pid is not None and is_kept(str((container.attrs.get("Names") or [""])[0])):
            continue
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True, v=True)
            count += 1
    if pid is None:
        remove_run_networks(client, run_id)
    return count


def remove_run_networks(client: docker.DockerClient, run_id: str | None = None) -> int:
    """Remove the project's networks (of one run, when ``run_id`` is given) that no container uses any more."""
    labels = [f"{LABEL_MANAGED}=1"] + ([f"{LABEL_RUN_ID}={run_id}"] if run_id else [])
    count = 0
    for network in client.networks.list(filters={"label": labels}):
        try:
            network.remove()
            count += 1
        except docker.errors.NotFound:
            continue
        except docker.errors.APIError:
            continue  # still in use (a live run's containers): its own end removes it
    return count


def find_leftovers(pool: Iterable[EngineHost], *, max_age: float, other_than: str | None = None) -> list[Managed]:
    """The leftovers on every host of ``pool`` that answers, but those of run ``other_than``."""
    found: list[Managed] = []
    for host in pool:
        try:
            client = host.connect()
        except SandboxConfigError:
            continue
        try:
            managed = list_managed(client, host, max_age=max_age)
        except (docker.errors.DockerException, requests.exceptions.RequestException):
            continue
        finally:
            client.close()
        found.extend(item for item in managed if item.leftover and item.run_id != other_than)
    return found


def sweep_pool(pool: Iterable[EngineHost], run_id: str, *, services: bool = True) -> int:
    """Remove a run's containers on every host of ``pool`` that answers; returns how many. Never raises.

    ``services=False`` leaves the run's shared services to their owner (plugin/services.py)."""
    removed = 0
    for host in pool:
        try:
            client = host.connect(timeout=20)
        except SandboxConfigError:
            continue
        with (
            contextlib.closing(client),
            contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException),
        ):
            removed += sweep_run(client, run_id, services=services)
    return removed


@dataclass(frozen=True)
class CleanReport:
    """What ``pytest-osworld cleanup`` did on one engine: lines to print, how many went, whether any stayed."""

    lines: list[str]
    removed: int
    failed: bool


def clean_engine(
    client: docker.DockerClient,
    host: EngineHost,
    *,
    run_id: str | None,
    every: bool,
    max_age: float,
    dry_run: bool,
) -> CleanReport:
    """Remove from one engine the leftovers of ended runs, every container of ``run_id``, or (``every``)
    every container with the project's labels; with ``dry_run`` only say what would go."""
    found = list_managed(client, host, max_age=max_age, run_id=run_id)
    chosen = [item for item in found if every or run_id or item.leftover]
    done = chosen if dry_run else remove_managed(client, chosen)
    # A run's services' network goes with its last container (one in use is kept).
    networks = 0 if dry_run else remove_run_networks(client, run_id)
    verb = "would remove" if dry_run else "removed"
    lines = [f"{verb} {item.line()}" for item in done]
    failed = [item for item in chosen if item not in done]
    lines += [f"could not remove {item.line()}" for item in failed]
    if networks:
        lines.append(f"removed {networks} network(s) of ended runs on {host.display}")
    kept = len(found) - len(chosen)
    if kept and not every and not run_id:
        lines.append(f"kept {kept} container(s) of live runs on {host.display} (--all removes them too)")
    return CleanReport(lines=lines, removed=len(done), failed=bool(failed))


def summary_line(leftovers: list[Managed]) -> str:
    """One terminal line: how many leftovers, of which runs, and the command that removes them."""
    runs: dict[str, int] = {}
    for item in leftovers:
        runs[item.run_id or "?"] = runs.get(item.run_id or "?", 0) + 1
    shown = ", ".join(f"{run} ({n})" for run, n in sorted(runs.items())[:5])
    more = f" and {len(runs) - 5} more runs" if len(runs) > 5 else ""
    hosts = sorted({item.host for item in leftovers})
    return (
        f"osworld: warning: {len(leftovers)} sandbox container(s) left by ended runs on {', '.join(hosts)}: "
        f"runs {shown}{more}; remove them with `pytest-osworld cleanup`"
    )
