"""A service's ``bootstrap`` (once per container, after its first readiness) and ``reset.command``
(before each holder's turn), on real echo containers: commands really run in them with docker exec."""

from __future__ import annotations

import docker
import httpx
import pytest

from pytest_osworld.sandbox import parse_hosts
from pytest_osworld.services import BUILTIN, ServiceConfigError, merge
from pytest_osworld.services.pool import ServiceError, remove_services
from tests.support.services import make_pool, run_leftovers, state_url

# Like GitLab's root token: the bootstrap reads a value passed from this process's environment and
# leaves it in the service (here: echo's state under the cookie "boot"); each run is counted in a file.
BOOTSTRAP = [
    "sh",
    "-c",
    "echo ran >> /tmp/bootstraps && python3 -c 'import json, os, urllib.request; urllib.request.urlopen("
    'urllib.request.Request("http://127.0.0.1:8000/api/state?cookie=boot", method="PUT", '
    'data=json.dumps({"token": os.environ["BOOT_TOKEN"]}).encode()), timeout=10).read()\'',
]


def lines_of(engine: docker.DockerClient, container_id: str, path: str) -> list[str]:
    found = engine.containers.get(container_id).exec_run(["cat", path])
    return found.output.decode().split() if found.exit_code == 0 else []


@pytest.mark.docker
def test_bootstrap_runs_once_per_container_whoever_attaches_and_after_restarts(
    engine: docker.DockerClient, desktop_image: str, run_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOT_TOKEN", "glpat-boot-value-1234")
    entries: dict[str, object] = {"echo": {"bootstrap": BOOTSTRAP, "pass_env": ["BOOT_TOKEN"]}}
    first, second = make_pool(run_id, entries), make_pool(run_id, entries)  # two processes of one run
    try:
        with first.for_task(["echo"], "os/a") as held:
            container = held.records["echo"].id
            token = httpx.get(state_url(first, "boot"), trust_env=False).json()["state"]
            assert token == {"token": "glpat-boot-value-1234"}
        with second.for_task(["echo"], "os/b") as held:
            assert held.records["echo"].id == container  # attached, not started again
        assert lines_of(engine, container, "/tmp/bootstraps") == ["ran"]
        # A restart keeps the container and what the bootstrap made in it: no second run.
        engine.containers.get(container).kill()
        with first.for_task(["echo"], "os/c") as held:
            assert held.records["echo"].restarted and held.records["echo"].id == container
        assert lines_of(engine, container, "/tmp/bootstraps") == ["ran"]
    finally:
        first.close()
        second.close()
        remove_services(parse_hosts([]), run_id)
    assert run_leftovers(engine, run_id) == ([], [])


@pytest.mark.docker
def test_a_failed_bootstrap_masks_the_task_and_the_next_task_tries_again(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    failing = ["sh", "-c", "echo try >> /tmp/bootstraps; echo 'no token given' >&2; exit 4"]
    pool = make_pool(run_id, {"echo": {"bootstrap": failing}})
    try:
        for task in ("os/a", "os/b"):
            with (
                pytest.raises(
                    ServiceError, match=r"^service echo: its bootstrap \(sh\) exited 4; last output: no token given$"
                ),
                pool.for_task(["echo"], task),
            ):
                pass
        container = pool.attach("echo").running.id
        assert lines_of(engine, container, "/tmp/bootstraps") == ["try", "try"]
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


@pytest.mark.docker
def test_a_bootstrap_is_bounded_by_the_readiness_deadline(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    pool = make_pool(run_id, {"echo": {"bootstrap": ["sleep", "120"], "readiness": {"deadline": 8}}})
    try:
        with (
            pytest.raises(ServiceError, match=r"its bootstrap \(sleep\) did not end within 8 s \(readiness.deadline\)"),
            pool.for_task(["echo"], "os/a"),
        ):
            pass
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


@pytest.mark.docker
def test_a_reset_command_runs_before_each_holders_turn(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    reset = ["sh", "-c", "echo reset >> /tmp/resets"]
    pool = make_pool(run_id, {"echo": {"exclusive": True, "reset": {"command": reset}}})
    try:
        for turn, task in enumerate(("os/a", "os/b", "os/c"), start=1):
            with pool.for_task(["echo"], task) as held:
                assert lines_of(engine, held.records["echo"].id, "/tmp/resets") == ["reset"] * turn
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


@pytest.mark.docker
def test_a_failing_reset_command_masks_with_its_output(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    pool = make_pool(run_id, {"echo": {"exclusive": True, "reset": {"command": ["sh", "-c", "echo locked; exit 2"]}}})
    try:
        with (
            pytest.raises(ServiceError, match=r"^service echo: its reset \(sh\) exited 2; last output: locked$"),
            pool.for_task(["echo"], "os/a"),
        ):
            pass
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


def test_the_keys_are_checked() -> None:
    echo = merge(BUILTIN, {"echo": {"bootstrap": ["true"]}})["echo"]
    assert echo.bootstrap == ["true"] and echo.reset is not None and echo.reset.http is not None  # others kept
    with pytest.raises(ServiceConfigError, match=r"services\.echo\.bootstrap: List should have at least 1 item"):
        merge(BUILTIN, {"echo": {"bootstrap": []}})
    with pytest.raises(ServiceConfigError, match=r"services\.shop\.reset: give http: or command:, not both"):
        merge(BUILTIN, {"shop": {"image": "x", "reset": {"http": {"path": "/r"}, "command": ["true"]}}})
    with pytest.raises(
        ServiceConfigError, match=r"services\.shop\.reset: give http: \{path: \.\.\.\} or state_key: NAME \(or command:"
    ):
        merge(BUILTIN, {"shop": {"image": "x", "reset": {}}})
