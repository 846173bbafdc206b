"""The container lifecycle every provider shares, on a real engine: start, readiness, removal on any
way out, and the sweep that finds every container the project labels, whatever its role."""

from __future__ import annotations

import time

import docker
import pytest

from pytest_osworld.sandbox import (
    LABEL_ROLE,
    ROLE_PROBE,
    ROLE_SANDBOX,
    ROLE_SERVICE,
    ROLE_VM_STATE,
    Containers,
    EngineHost,
    NotReady,
    Owner,
    SandboxError,
    list_managed,
    sweep_run,
    wait_ready,
)
from tests.sandbox import support

pytestmark = pytest.mark.docker


def explain(why: NotReady) -> SandboxError:
    return SandboxError(f"{why.cause}: {why.name}{why.state}")


def test_a_started_container_is_reached_and_removed_on_an_interrupt(
    engine: docker.DockerClient, stand_in: str, run_id: str
) -> None:
    containers = Containers(EngineHost(), Owner(run_id=run_id), serial_prefix="t")
    try:
        running = containers.start(
            {"image": stand_in, "labels": Owner(run_id=run_id).labels()}, ports=[5000], refused="a test container"
        )
        assert f"-{run_id}-main-t1-" in running.name
        url = running.urls([5000])[5000]
        wait_ready(running, url + "/screenshot", deadline=time.monotonic() + 20, explain=explain)
        assert running.running()
        with pytest.raises(KeyboardInterrupt), containers.removed_on_failure(running):
            raise KeyboardInterrupt
        assert support.run_containers(engine, run_id) == []
        assert not running.running()
    finally:
        containers.close()


def test_a_container_that_ends_while_waiting_fails_at_once(
    engine: docker.DockerClient, stand_in: str, run_id: str
) -> None:
    containers = Containers(EngineHost(), Owner(run_id=run_id))
    try:
        # Ends two seconds in: after its ports are read, before anything answers.
        args = {
            "image": stand_in,
            "labels": Owner(run_id=run_id).labels(),
            "entrypoint": ["/bin/sh", "-c"],
            "command": ["sleep 2; echo 'fatal: gone' >&2; exit 3"],
        }
        running = containers.start(args, ports=[5000], refused="a test container")
        started = time.monotonic()
        with (
            pytest.raises(SandboxError, match=r"(?s)^ended: .*exit code 3.*fatal: gone"),
            containers.removed_on_failure(running),
        ):
            wait_ready(running, running.urls([5000])[5000] + "/", deadline=time.monotonic() + 60, explain=explain)
        assert time.monotonic() - started < 15
        assert support.run_containers(engine, run_id) == []
    finally:
        containers.close()


def test_the_engines_refusal_is_a_sandbox_error(engine: docker.DockerClient, run_id: str) -> None:
    containers = Containers(EngineHost(), Owner(run_id=run_id))
    try:
        with pytest.raises(SandboxError, match="refused to start a test container"):
            containers.start(
                {"image": "example/absent:1", "labels": Owner(run_id=run_id).labels()},
                ports=[5000],
                refused="a test container",
            )
        assert support.run_containers(engine, run_id) == []
    finally:
        containers.close()


@pytest.mark.parametrize("role", [ROLE_SANDBOX, ROLE_PROBE, ROLE_VM_STATE, ROLE_SERVICE, None])
def test_every_labelled_container_is_found_and_swept_whatever_its_role(
    engine: docker.DockerClient, stand_in: str, run_id: str, role: str | None
) -> None:
    labels = Owner(run_id=run_id).labels() | ({LABEL_ROLE: role} if role else {})
    made = engine.containers.create(stand_in, labels=labels, name=f"pytest-osworld-{run_id}-{role or 'none'}")
    [found] = list_managed(engine, EngineHost(), max_age=3600, run_id=run_id)
    assert (found.id, found.role, found.leftover) == (made.id, role, False)
    assert sweep_run(engine, run_id) == 1
    assert support.run_containers(engine, run_id) == []
