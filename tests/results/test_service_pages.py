"""The shared services a task held, on its Allure page and in the run's summary: a real run of the echo
service (real containers, a service killed mid-task and restarted for the next task)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import docker
import pytest

from pytest_osworld.results.allure_report import FIXTURES_ENTRY, SERVICES_ENTRY, SETUP_ENTRY
from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID
from tests.episode.runs import run_tasks
from tests.services.tasks import plain_task, service_task, write_tasks

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def desktop_image() -> str:
    """The echo service runs on the desktop image: built once when missing or stale."""
    from pytest_osworld.guest import build

    with contextlib.closing(docker.from_env()) as client:
        return str(build.ensure_image(client).id)


def pages(folder: Path) -> dict[str, dict[str, Any]]:
    found = [json.loads(p.read_text()) for p in folder.glob("*-result.json")]
    return {r["name"]: r for r in found}


def set_up_of(folder: Path, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    containers = [json.loads(p.read_text()) for p in folder.glob("*-container.json")]
    return {b["name"]: b for c in containers if result["uuid"] in c.get("children", []) for b in c.get("befores", [])}


def parameters(step: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: p["value"] for p in step.get("parameters", [])}


def test_each_task_page_shows_the_services_it_held_and_the_summary_counts_them(
    pytester: pytest.Pytester, desktop_image: str
) -> None:
    pytester.makeini("[pytest]\n")
    tasks = write_tasks(
        pytester.path / "t.jsonl",
        [service_task("s1"), service_task("k1", kill=True), service_task("after"), plain_task("p1")],
    )
    alluredir = pytester.path / "allure-results"
    run = run_tasks(pytester, tasks, "--osworld-agent", "oracle", f"--alluredir={alluredir}")
    assert run.result.parseoutcomes() == {"passed": 3, "masked": 1}
    records = run.records()
    container = records["os/s1"]["services"]["echo"]["id"]
    found = pages(alluredir)

    held = set_up_of(alluredir, found["os/s1"])
    assert list(held) == [FIXTURES_ENTRY, SERVICES_ENTRY, SETUP_ENTRY]  # taken by the fixtures, before the setup
    (step,) = held[SERVICES_ENTRY]["steps"]
    assert step["name"] == f"service echo ({container[:12]})" and step["status"] == "passed"
    assert parameters(step) == {
        "image": "pytest-osworld/desktop:latest",
        "exclusive": "no",
        "waited": "0.00 s",
        "restarted": "no",
        "state key": "-",
    }
    # Killed during its task: the service's step is broken with the mask's reason, and so is the entry.
    killed = set_up_of(alluredir, found["os/k1"])[SERVICES_ENTRY]
    assert killed["status"] == "broken" and killed["steps"][0]["status"] == "broken"
    assert killed["statusDetails"]["message"].startswith("service echo went down during the task: its container")
    # The next task found it down and restarted it: the same container.
    (restarted,) = set_up_of(alluredir, found["os/after"])[SERVICES_ENTRY]["steps"]
    assert restarted["name"] == f"service echo ({container[:12]})" and parameters(restarted)["restarted"] == "yes"
    assert SERVICES_ENTRY not in set_up_of(alluredir, found["os/p1"])

    assert run.summary()["services"] == {
        "echo": {
            "images": ["pytest-osworld/desktop:latest"],
            "exclusive": False,
            "tasks": 3,
            "starts": 1,
            "restarts": 1,
            "failures": 1,
        }
    }
    run.result.stdout.fnmatch_lines(["  services   echo: 3 tasks, 1 start, 1 restart, 1 failure"])
    with contextlib.closing(docker.from_env()) as client:
        labels = {"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run.run_id}"]}
        assert client.containers.list(all=True, filters=labels) == []
