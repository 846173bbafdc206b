"""The bundled tasks of GIMP, VLC, Thunderbird, VS Code and Impress's settings (tasks/apps.jsonl) prove those
applications and OSWorld's getters and metrics for them: the oracle scores 1 on each, the null control 0."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.episode.runs import run_tasks
from tests.support.paths import REPO

APPS = REPO / "tasks" / "apps.jsonl"
DOMAINS = {"gimp", "vlc", "thunderbird", "vs_code", "libreoffice_impress"}


def _tasks() -> list[dict[str, Any]]:
    return [json.loads(line) for line in APPS.read_text().splitlines()]


def test_every_app_domain_has_two_tasks_and_one_combines_apps() -> None:
    tasks = _tasks()
    for domain in DOMAINS:
        assert sum(t["domain"] == domain for t in tasks) >= 2, domain
    multi = [t for t in tasks if t["domain"] == "multi_apps"]
    assert multi and all(len(set(t["related_apps"]) & DOMAINS) >= 2 for t in multi)
    # Assets come from the project (tasks/assets), never from the internet.
    assert "http" not in json.dumps([t["config"] for t in tasks])


@pytest.mark.docker
def test_oracle_passes_every_app_task(pytester: pytest.Pytester) -> None:
    count = len(_tasks())
    run = run_tasks(pytester, APPS, "-n", "2", "--osworld-agent", "oracle")
    run.result.assert_outcomes(passed=count)
    records = run.records()
    assert len(records) == count
    assert {key: r["score"] for key, r in records.items()} == dict.fromkeys(records, 1.0)
    assert {r["domain"] for r in records.values()} == DOMAINS | {"multi_apps"}
    assert run.result.ret == 0


@pytest.mark.docker
def test_null_control_scores_zero_on_every_app_task(pytester: pytest.Pytester) -> None:
    count = len(_tasks())
    run = run_tasks(pytester, APPS, "-n", "2", "--osworld-agent", "null")
    run.result.assert_outcomes(failed=count)
    records = run.records()
    assert len(records) == count
    for key, record in records.items():
        assert record["score"] == 0.0, key
        assert record["termination"] == "done", key
