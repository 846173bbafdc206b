"""The warm pool of a local provider, for real: desktop sandboxes of the project's image on this engine.

- the null control over the bundled tasks with ``-n 2 --osworld-warm-pool 2``: after the first claim of
  each worker's pool no task waits for a sandbox to start (each record's claim was warm, and shorter
  than its sandbox's own start); nothing is left (about 1.5 min);
- Ctrl-C while a test holds a pooled sandbox, and the run's process killed hard: the first shrinks the
  pool to zero; after the second the pooled sandboxes are the leftovers ``pytest-osworld cleanup``
  names as warm pool and removes (about 30 s each).
"""

from __future__ import annotations

import os
import signal
from typing import Any

import docker
import pytest

from pytest_osworld.sandbox import EngineHost, list_managed
from tests.episode.runs import BUNDLED, run_tasks
from tests.sandbox import support
from tests.sandbox.sessions import cleanup, finish, start_session, wait_holding

pytestmark = pytest.mark.docker

TASKS = len(BUNDLED.read_text().splitlines())


def test_with_a_warm_pool_no_task_waits_for_a_start_after_the_first(
    pytester: pytest.Pytester, engine: docker.DockerClient
) -> None:
    run = run_tasks(pytester, BUNDLED, "-n", "2", "--osworld-agent", "null", "--osworld-warm-pool", "2")
    run.result.assert_outcomes(failed=TASKS)  # the null control scores 0 on every task
    assert support.run_containers(engine, run.run_id) == []

    records = list(run.records().values())
    claims = [r["sandbox"]["placement"] for r in records]
    assert all(c["pooled"] and c["provider"] == "desktop" for c in claims)
    assert all(c["node_address"] == "unix:///var/run/docker.sock" for c in claims)
    by_worker: dict[str, list[dict[str, Any]]] = {}
    for record in records:  # each xdist worker keeps a pool of its own
        by_worker.setdefault(record["worker"], []).append(record)
    assert sorted(by_worker) == ["gw0", "gw1"]
    cold = 0
    for own in by_worker.values():
        first, *rest = sorted(own, key=lambda r: r["sandbox"]["placement"]["claimed_at"])
        cold += not first["sandbox"]["placement"]["warm"]
        waited = [r["task_id"] for r in rest if not r["sandbox"]["placement"]["warm"]]
        assert waited == [], f"claims that waited for a start after their pool's first: {waited}"
        for record in rest:
            claim = record["sandbox"]["placement"]
            assert record["durations"]["sandbox_ready"] == claim["claim_seconds"]  # what the task waited
            if claim["rejected"]:
                continue  # a ready one failed its check first (a guest too slow to answer): its time is that check's
            # A warm claim is a check of a ready sandbox: far shorter than starting one.
            assert claim["claim_seconds"] < record["sandbox"]["ready_seconds"], claim
            assert claim["claim_seconds"] < first["sandbox"]["placement"]["claim_seconds"], claim

    figures = run.summary()["sandboxes"]
    assert (figures["claims"], figures["pooled"], figures["warm"]) == (TASKS, TASKS, TASKS - cold)
    assert list(figures["nodes"]) == ["unix:///var/run/docker.sock"]
    run.result.stdout.fnmatch_lines(
        [f"  sandboxes  {TASKS} claims: p50 *, p95 *; * of {TASKS} pooled claims found one ready*"]
    )


POOLED = ("--osworld-warm-pool", "1")


def test_ctrl_c_shrinks_the_pool_to_zero(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    process, holding = start_session(osworld_pytester, run_id, *POOLED)
    [container_id] = wait_holding(process, holding, 1)
    assert engine.containers.get(container_id).labels["io.pytest-osworld.pool"] == "desktop"
    process.send_signal(signal.SIGINT)
    code, output = finish(process)
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert support.run_containers(engine, run_id) == [], output


def test_pooled_sandboxes_of_a_killed_run_are_leftovers_cleanup_removes(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    process, holding = start_session(osworld_pytester, run_id, *POOLED)
    [held] = wait_holding(process, holding, 1)
    os.killpg(process.pid, signal.SIGKILL)  # nothing in the run's process can tear down
    process.communicate(timeout=30)
    left = support.run_containers(engine, run_id)
    assert left, "the held sandbox and the pool's refill are left"
    assert engine.containers.get(held).status == "running"
    found = [m for m in list_managed(engine, EngineHost(), max_age=3600) if m.run_id == run_id]
    assert found and all(m.leftover and m.pool == "desktop" for m in found), found  # its run has ended

    done = cleanup("--run-id", run_id)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "warm pool desktop" in done.stdout, done.stdout  # the sweep knows pooled sandboxes
    # The pool's refill may still have been on its way to the engine when the process died: the sweep
    # can find one container more than were listed before it, never fewer.
    named = [line for line in done.stdout.splitlines() if line.startswith("removed ") and " run " in line]
    assert all(any(f" {name} (" in line for line in named) for name in left), done.stdout
    assert f"{len(named)} container(s) removed" in done.stdout, done.stdout
    assert support.run_containers(engine, run_id) == []
