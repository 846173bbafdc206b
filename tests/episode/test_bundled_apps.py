"""The bundled tasks of GIMP, VLC, Thunderbird, VS Code and Impress's settings (tasks/apps.jsonl) prove those
applications and OSWorld's getters and metrics for them: the oracle scores 1 on each, the null control 0."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.bundled_runs import task_keys
from tests.support.paths import REPO
from tests.support.shared_runs import SharedRun

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
def test_oracle_passes_every_app_task(bundled_oracle: SharedRun) -> None:
    keys = task_keys(APPS)
    records = {key: record for key, record in bundled_oracle.records().items() if key in keys}
    assert set(records) == keys, bundled_oracle.result.stdout.str()
    assert {key: r["score"] for key, r in records.items()} == dict.fromkeys(records, 1.0)
    assert {r["domain"] for r in records.values()} == DOMAINS | {"multi_apps"}
    outcomes = bundled_oracle.task_outcomes()
    assert {key: outcomes.get(key) for key in keys} == dict.fromkeys(keys, "PASSED")


@pytest.mark.docker
def test_null_control_scores_zero_on_every_app_task(bundled_null: SharedRun) -> None:
    keys = task_keys(APPS)
    records = {key: record for key, record in bundled_null.records().items() if key in keys}
    assert set(records) == keys, bundled_null.result.stdout.str()
    for key, record in records.items():
        assert record["score"] == 0.0, key
        assert record["termination"] == "done", key
    outcomes = bundled_null.task_outcomes()
    assert {key: outcomes.get(key) for key in keys} == dict.fromkeys(keys, "FAILED")
