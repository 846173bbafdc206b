"""The pool and the lock directly: a real echo container, real HTTP, real processes queueing."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import docker
import httpx
import pytest

from pytest_osworld.locks import FairLock
from pytest_osworld.sandbox import parse_hosts, sweep_run
from pytest_osworld.services.naming import network_name
from pytest_osworld.services.pool import ServiceError, remove_services
from tests.support.services import make_pool, run_leftovers, state_url


@pytest.mark.docker
def test_an_exclusive_service_is_reset_between_holders_and_records_its_turn(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    pool = make_pool(run_id, {"echo": {"exclusive": True}})
    try:
        with pool.for_task(["echo"], "os/a") as held:
            assert held.network == network_name(run_id)
            record = held.records["echo"]
            assert record.exclusive and record.held_at and record.waited_seconds < 1.0 and not record.restarted
            httpx.put(state_url(pool, "a"), json={"left": "by a"}, trust_env=False).raise_for_status()
            assert held.problem() is None
        # Before the next holder's turn the service's reset (POST /reset) ran: a's state is gone.
        with pool.for_task(["echo"], "os/b"):
            assert httpx.get(state_url(pool, "a"), trust_env=False).json()["state"] == {}
        # The service's hostname on the run's network is what a sandbox resolves.
        container = engine.containers.get(record.id)
        aliases = container.attrs["NetworkSettings"]["Networks"][network_name(run_id)]["Aliases"]
        assert "echo.osworld.test" in aliases
        assert container.ports["8000/tcp"][0]["HostIp"] == "127.0.0.1"  # published on loopback only
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)
    assert run_leftovers(engine, run_id) == ([], [])


@pytest.mark.docker
def test_a_state_key_service_gives_each_task_its_own_key_and_is_not_reset(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    pool = make_pool(run_id, {"echo": {"reset": {"state_key": "cookie"}}})
    try:
        with pool.for_task(["echo"], "os/a") as held:
            assert held.records["echo"].state_key == f"{run_id}-os~2Fa"  # URL-safe: it goes into URLs unquoted
            assert not held.records["echo"].exclusive and held.records["echo"].held_at is None
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


@pytest.mark.docker
def test_restarts_zero_masks_at_once_and_a_process_sweep_keeps_services(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    pool = make_pool(run_id, restarts=0)
    try:
        with pool.for_task(["echo"], "os/a") as held:
            container_id = held.records["echo"].id
        # A worker's own sweep at its end (by pid) leaves the run's services to the run's owner.
        assert sweep_run(engine, run_id, pid=os.getpid()) == 0
        assert engine.containers.get(container_id).status == "running"
        engine.containers.get(container_id).kill()
        with (
            pytest.raises(ServiceError, match=r"(?s)service echo is down: .*exit code 137.*service_restarts is 0"),
            pool.for_task(["echo"], "os/b"),
        ):
            pass
        # The sweep of the whole run (the controller's, or cleanup --run-id) takes the service and the network.
        assert sweep_run(engine, run_id) == 1
        assert run_leftovers(engine, run_id) == ([], [])
    finally:
        pool.close()
        remove_services(parse_hosts([]), run_id)


@pytest.mark.docker
def test_cleanup_removes_a_crashed_runs_service_and_network(
    engine: docker.DockerClient, desktop_image: str, run_id: str
) -> None:
    pool = make_pool(run_id)
    try:
        with pool.for_task(["echo"], "os/a"):
            pass
    finally:
        pool.close()  # a process that ends without removing anything, as a crashed run
    assert run_leftovers(engine, run_id)[1] == [network_name(run_id)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest_osworld.cli", "cleanup", "--run-id", run_id],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "svc-echo" in done.stdout and "removed 1 network(s)" in done.stdout, done.stdout
    assert run_leftovers(engine, run_id) == ([], [])


# --- the fair lock
def _queue_and_hold(path: str, name: str, order: str, ready: str) -> None:
    Path(ready).touch()
    with FairLock(Path(path)).hold():
        with open(order, "a") as out:
            out.write(name + "\n")
        time.sleep(0.05)


def test_the_lock_serves_processes_first_come_first_served(tmp_path: Path) -> None:
    lock = FairLock(tmp_path / "q.queue")
    order = tmp_path / "order.txt"
    context = multiprocessing.get_context("spawn")
    procs = []
    with lock.hold():
        for name in ("first", "second", "third", "fourth"):
            ready = tmp_path / f"{name}.ready"
            proc = context.Process(target=_queue_and_hold, args=(str(lock.path), name, str(order), str(ready)))
            proc.start()
            procs.append(proc)
            # Wait until it is in the queue before the next one comes.
            deadline = time.monotonic() + 30
            while len(json.loads(lock.path.read_text() or "[]")) < len(procs) + 1:
                assert time.monotonic() < deadline, "a process never queued"
                time.sleep(0.02)
    for proc in procs:
        proc.join(30)
        assert proc.exitcode == 0
    assert order.read_text().split() == ["first", "second", "third", "fourth"]
    assert json.loads(lock.path.read_text()) == []


def test_a_dead_holders_ticket_does_not_block_the_queue(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path = tmp_path / "q.queue"
    path.write_text(json.dumps([{"id": "gone", "pid": dead.stdout.strip(), "start": "x"}]))
    got = threading.Event()

    def take() -> None:
        with FairLock(path).hold() as held:
            assert held.waited_seconds < 5
            got.set()

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(10)
    assert got.is_set()
