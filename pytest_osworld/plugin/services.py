"""pytest hooks and fixtures of shared services (docs/services.md).

- ``osworld_services`` (session): this process's :class:`~pytest_osworld.services.pool.ServicePool`,
  made only when a test needs a service; it starts or attaches to services, never removes them.
- ``osworld_task_services`` (function): what the running task item needs, held for its whole life
  (checked healthy, exclusive ones in turn and reset); None for a task that needs none. The sandbox
  fixture puts the sandbox on the services' network only then.

After ``-k``/``-m``: a task that needs a service no definition names is skipped, before any sandbox;
so is one whose service's image is not on the engine (one query per image, not per task).
At the end of the run its owner (the plain session, or xdist's controller after the workers) removes
the run's services and their network; a crashed run's are found by the leftover sweep (role ``service``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import docker.errors
import pytest
import requests.exceptions

from pytest_osworld.plugin.items import OsworldItem, TaskItem
from pytest_osworld.plugin.run import get_run
from pytest_osworld.plugin.sandbox import owner_of
from pytest_osworld.sandbox import SandboxConfigError, find_image, host_pool, pick_host
from pytest_osworld.services import Service, defined, required, undefined_reason
from pytest_osworld.services.pool import ServiceError, ServicePool, TaskServices, remove_services

_USED_KEY = "osworld_services_used"  # in xdist's workeroutput: this worker used a service


@dataclass
class _State:
    used: bool = False  # this process made a pool, or a worker said it did (or died)


_STATE = pytest.StashKey[_State]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _State()
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistServiceHooks(), "osworld-services-xdist")


class _XdistServiceHooks:
    """The controller learns which workers may have started services (or died before saying)."""

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        if error is not None or output.get(_USED_KEY):
            node.config.stash[_STATE].used = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, before any sandbox starts, a task that needs a service this run does not define, or one
    whose image is not on the engine."""
    settings = get_run(config).settings
    services = defined(settings)
    needing: list[tuple[TaskItem, list[str]]] = []
    for item in items:
        if not isinstance(item, TaskItem):
            continue
        needed = required(item.entry.task, services, proxy=settings.services.proxy)
        if reason := undefined_reason(needed, services):
            item.add_marker(pytest.mark.skip(reason=f"unsupported here: {reason}"))
        elif needed:
            needing.append((item, needed))
    absent = _absent_images(config, [services[name] for name in sorted({n for _, needed in needing for n in needed})])
    for item, needed in needing:
        reasons = [absent[name] for name in needed if name in absent]
        if reasons:
            item.add_marker(pytest.mark.skip(reason=f"unsupported here: {'; '.join(reasons)}"))


def _absent_images(config: pytest.Config, services: list[Service]) -> dict[str, str]:
    """Why each of ``services`` whose ``image:`` is not on this process's engine cannot start, by name
    (one query per image; a ``build:`` image is built when first needed). An engine that does not
    answer decides nothing here: the session's check says so."""
    images = sorted({s.image for s in services if s.image is not None})
    if not images:
        return {}
    try:
        host = pick_host(host_pool(get_run(config).settings), owner_of(config).worker_id)
        client = host.connect(timeout=20)
    except SandboxConfigError:
        return {}
    try:
        present = {image: find_image(client, image) is not None for image in images}
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return {}
    finally:
        client.close()
    return {
        s.name: f"service {s.name}: image {s.image} is not on the engine at {host.display}; "
        "pull or build it (docs/services.md)"
        for s in services
        if s.image is not None and not present[s.image]
    }


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The run's owner removes its services and network: the plain session, or xdist's controller once
    every worker has stopped (a worker's own end must not: others may still use them)."""
    config = session.config
    state = config.stash.get(_STATE, None)
    if state is None or _is_worker(config):
        return
    run = get_run(config)
    # Interrupted: an xdist worker (or a test cut short) may have started them; not when the run
    # stopped at collection, before any test.
    if not (state.used or (session.exitstatus == pytest.ExitCode.INTERRUPTED and run.runs_tests)):
        return
    try:
        pool = host_pool(run.settings)
    except SandboxConfigError:
        return
    removed = remove_services(pool, run.run_id)
    if removed:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"osworld: removed {removed} shared service container(s) of run {run.run_id}")


@pytest.fixture(scope="session")
def osworld_services(pytestconfig: pytest.Config) -> Iterator[ServicePool]:
    """This process's view of the run's shared services (started by the first process that needs one)."""
    run = get_run(pytestconfig)
    settings = run.settings
    owner = owner_of(pytestconfig)
    pytestconfig.stash[_STATE].used = True
    workeroutput = getattr(pytestconfig, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_USED_KEY] = True
    try:
        host = pick_host(host_pool(settings), owner.worker_id)
        pool = ServicePool(
            defined(settings),
            host=host,
            owner=owner,
            suffix=settings.services.host_suffix,
            restarts=settings.services.restarts,
        )
    except SandboxConfigError as exc:
        raise ServiceError(str(exc)) from None
    try:
        yield pool
    finally:
        pool.close()
        if not _is_worker(pytestconfig):
            # The plain session owns the run: nothing else will use its services.
            remove_services(host_pool(settings), run.run_id)


@pytest.fixture
def osworld_task_services(request: pytest.FixtureRequest) -> Iterator[TaskServices | None]:
    """The shared services the running task item needs, held until it ends; None when it needs none.

    A service that is down (after ``service_restarts`` restarts) raises :class:`ServiceError`: the task
    is masked ``service_error`` before its sandbox starts (a V2 item's ``osworld_v2_loaded`` records it).
    """
    item = request.node
    settings = get_run(request.config).settings
    names = item.service_names(settings) if isinstance(item, OsworldItem) else []
    if not names:
        yield None
        return
    pool: ServicePool = request.getfixturevalue("osworld_services")
    # Filled as each service is taken: a record the plugin writes for a masked item shows what it held.
    item.osworld_services = {}
    with pool.for_task(names, item.run_key, records=item.osworld_services) as held:
        yield held
