"""Work run once on every live node (or on one) as Ray tasks: without a run's agents, for the CLI and
for a run whose owner holds no agents any more.

- ``what_a_node_provides``: what the inner sandbox provides, read on a node that runs sandboxes (the
  image is on the nodes' engines, not necessarily on the machine that runs pytest);
- ``clean_node``: ``pytest-osworld cleanup`` on a node's own engine (leftovers judged there, where
  the processes that own its containers live);
- ``sweep_node``: every container of one run on a node's engine (the end of a run whose agents are gone).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import docker.errors
import requests.exceptions

from pytest_osworld.sandbox.base import SandboxConfigError
from pytest_osworld.sandbox.hosts import EngineHost
from pytest_osworld.sandbox.leftovers import CleanReport, clean_engine, sweep_run
from pytest_osworld.sandbox.profiles import sandbox_provides
from pytest_osworld.sandbox.provides import Provides
from pytest_osworld.sandbox.ray.resources import read_nodes, slot_nodes
from pytest_osworld.settings import Settings

TASK_TIMEOUT = 600.0


def what_it_provides(settings: dict[str, Any], build: bool) -> Provides:
    return sandbox_provides(Settings.model_validate(settings), build=build, progress=lambda line: None)


def sweep_node(run_id: str) -> int:
    host = EngineHost()
    try:
        client = host.connect(timeout=20)
    except SandboxConfigError:
        return 0
    with (
        contextlib.closing(client),
        contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException),
    ):
        return sweep_run(client, run_id, services=False)
    return 0


def clean_node(run_id: str | None, every: bool, max_age: float, dry_run: bool) -> CleanReport:
    """What ``pytest-osworld cleanup`` does on this node's engine."""
    host = EngineHost()
    try:
        client = host.connect(timeout=30)
    except SandboxConfigError as exc:
        return CleanReport(lines=[f"pytest-osworld cleanup: {exc}"], removed=0, failed=True)
    with contextlib.closing(client):
        return clean_engine(client, host, run_id=run_id, every=every, max_age=max_age, dry_run=dry_run)


def on_every_node(ray: Any, slot: str | None, function: Callable[..., Any], *args: Any) -> dict[str, Any]:
    """``function(*args)`` as a task on each live node (those declaring ``slot`` when given); answers by node id."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(function)
    nodes = [n for n in read_nodes(ray.nodes(), slot or "") if n.alive]
    if slot:
        nodes = slot_nodes(nodes)
    refs = {
        node.node_id: remote.options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False)
        ).remote(*args)
        for node in nodes
    }
    answers: dict[str, Any] = {}
    for node_id, ref in refs.items():
        try:
            answers[node_id] = ray.get(ref, timeout=TASK_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - a node lost meanwhile answers with its error
            answers[node_id] = exc
    return answers


def what_a_node_provides(ray: Any, slot: str, settings: dict[str, Any], build: bool) -> Provides:
    """What the sandbox provides, read on the nodes that declare ``slot`` in turn: the first known answer
    (a node whose engine does not answer says nothing of the image), else the last one."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = slot_nodes(read_nodes(ray.nodes(), slot))
    if not nodes:
        raise SandboxConfigError(f"no live Ray node declares the sandbox slot resource {slot!r}")
    remote = ray.remote(what_it_provides)
    found: Provides | None = None
    for node in nodes:
        task = remote.options(num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=False))
        found = ray.get(task.remote(settings, build), timeout=TASK_TIMEOUT)
        assert isinstance(found, Provides)
        if found.known:
            return found
    assert found is not None
    return found
