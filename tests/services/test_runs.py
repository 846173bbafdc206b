"""Shared services in real runs: real containers of the echo service, real sandboxes, real HTTP.

Every task here reaches the service by its hostname from inside its sandbox (setup, the oracle's
solution and the evaluator all do), so a task passes only through the real path.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from pathlib import Path

import docker
import pytest

from tests.episode.runs import run_tasks
from tests.services.tasks import plain_task, service_task, write_tasks
from tests.support.services import run_leftovers

ORACLE = ("--osworld-agent", "oracle")


def outcomes(result: pytest.RunResult) -> dict[str, int]:
    """The run's last line as counts (a mask is its own outcome: ``2 passed, 2 masked``)."""
    return {k: v for k, v in result.parseoutcomes().items() if k not in ("seconds",)}


@pytest.mark.docker
def test_started_once_across_two_workers_and_resolved_from_every_sandbox(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    tasks = write_tasks(
        osworld_pytester.path / "t.jsonl",
        [service_task("s1"), service_task("s2"), service_task("s3"), service_task("s4"), plain_task("p1")],
    )
    run = run_tasks(osworld_pytester, tasks, "-p", "xdist", "-n", "2", *ORACLE, run_id=run_id)
    run.result.assert_outcomes(passed=5)
    records = run.records()
    used = {key: r["services"] for key, r in records.items()}
    assert used["os/p1"] is None  # a task without services is unchanged
    echo = [used[f"os/s{i}"]["echo"] for i in range(1, 5)]
    assert len({e["id"] for e in echo}) == 1  # one container for the whole run
    assert {records[f"os/s{i}"]["worker"] for i in range(1, 5)} == {"gw0", "gw1"}  # both workers used it
    assert all(e["image"] == "pytest-osworld/desktop:latest" and not e["exclusive"] for e in echo)
    assert all("needs_services" in records[f"os/s{i}"]["markers"] for i in range(1, 5))
    assert run_leftovers(engine, run_id) == ([], [])  # no container, no network left


@pytest.mark.docker
def test_a_broken_service_masks_exactly_the_tasks_that_need_it(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makefile(
        ".yaml",
        profile="""
services:
  broken:
    build: desktop
    entrypoint: [sh, -c, "echo broken on purpose; exit 3"]
    ports: [8000]
    readiness: {path: /health, deadline: 10}
""",
    )
    tasks = write_tasks(
        osworld_pytester.path / "t.jsonl",
        [
            service_task("b1", service="broken"),
            service_task("e1"),
            service_task("b2", service="broken"),
            plain_task("p1"),
        ],
    )
    run = run_tasks(osworld_pytester, tasks, "--osworld-profile=profile.yaml", *ORACLE, run_id=run_id)
    assert outcomes(run.result) == {"passed": 2, "masked": 2}
    records = run.records()
    for key in ("os/b1", "os/b2"):
        assert records[key]["termination"] == "service_error" and records[key]["score"] is None
        message = records[key]["message"]
        assert "service broken is down" in message and "exit code 3" in message, message
        assert "still down after 1 restart(s)" in message and "broken on purpose" in message
        assert records[key]["masked"] is True
    assert records["os/e1"]["score"] == 1.0 and records["os/p1"]["score"] == 1.0
    run.result.stdout.fnmatch_lines(["*masked (service_error): service broken is down*"])
    assert run_leftovers(engine, run_id) == ([], [])


def _interval(record: dict[str, object]) -> tuple[datetime, datetime]:
    return datetime.fromisoformat(str(record["started_at"])), datetime.fromisoformat(str(record["finished_at"]))


@pytest.mark.docker
def test_an_exclusive_service_is_held_by_one_task_at_a_time(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    osworld_pytester.makefile(".yaml", profile="services:\n  echo:\n    exclusive: true\n")
    tasks = write_tasks(
        osworld_pytester.path / "t.jsonl", [service_task(f"x{i}", hold=1.5) for i in range(1, 4)] + [plain_task("p1")]
    )
    run = run_tasks(
        osworld_pytester, tasks, "-p", "xdist", "-n", "2", "--osworld-profile=profile.yaml", *ORACLE, run_id=run_id
    )
    run.result.assert_outcomes(passed=4)
    records = [r for key, r in run.records().items() if key != "os/p1"]
    held = sorted(_interval(r) for r in records)
    for (_, first_end), (second_start, _) in itertools.pairwise(held):
        assert first_end <= second_start, held  # each episode ran inside its turn: no two at once
    uses = [r["services"]["echo"] for r in records]
    assert all(u["exclusive"] and u["held_at"] for u in uses)
    assert max(u["waited_seconds"] for u in uses) > 1.0  # a worker waited for the other's turn
    for record in records:  # the wait is not the episode's: its agent phase is the hold (1.5 s) and a bit
        assert record["durations"]["agent"] < record["services"]["echo"]["waited_seconds"] + 30
    assert run_leftovers(engine, run_id) == ([], [])


@pytest.mark.docker
def test_a_service_killed_mid_task_masks_that_task_and_the_next_gets_it_restarted(
    osworld_pytester: pytest.Pytester, engine: docker.DockerClient, run_id: str
) -> None:
    tasks = write_tasks(
        osworld_pytester.path / "t.jsonl", [service_task("k1", kill=True), service_task("after"), plain_task("p1")]
    )
    run = run_tasks(osworld_pytester, tasks, *ORACLE, run_id=run_id)
    assert outcomes(run.result) == {"passed": 2, "masked": 1}
    records = run.records()
    killed = records["os/k1"]
    assert killed["termination"] == "service_error" and killed["score"] is None
    assert killed["message"].startswith("service echo went down during the task: its container"), killed["message"]
    assert "the episode had ended done" in killed["message"]
    after = records["os/after"]
    assert after["score"] == 1.0 and after["services"]["echo"]["restarted"] is True
    assert after["services"]["echo"]["id"] == killed["services"]["echo"]["id"]  # the same container, restarted
    assert run_leftovers(engine, run_id) == ([], [])


def test_write_tasks_round_trip(tmp_path: Path) -> None:
    """The helper writes what the runs above read (one JSON object per line)."""
    path = write_tasks(tmp_path / "t.jsonl", [service_task("a"), plain_task("b")])
    assert len(path.read_text().splitlines()) == 2
