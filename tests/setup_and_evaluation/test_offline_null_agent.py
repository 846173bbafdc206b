"""The null agent (DONE at once) over test_small's chrome tasks, on the real desktop: no task may pass.

Where the guest cannot reach a task's site (a machine without the internet, as CI is), the setup step
that opens it fails and the task is masked (setup_error, naming the URL); upstream goes on, and its
cookie task then scores 1 for doing nothing (no cookie was ever set). Where the sites load, the null
agent scores 0 on each. Either way, nothing passes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.tasks.readers import read_split
from tests.support.paths import shared_examples

pytestmark = pytest.mark.docker

COOKIE_TASK = "chrome/7b6c7e24-c58a-49fc-a5bb-d57b80e5b4c3"


def _records(run_dir: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in run_dir.glob("*/*/result.json"):
        if not path.parts[-3].startswith("_"):
            data = json.loads(path.read_text())
            found[f"{data['domain']}/{data['task_id']}"] = data
    return found


def test_the_null_agent_passes_no_chrome_task_of_test_small(pytester: pytest.Pytester, engine: Any) -> None:
    split = shared_examples() / "test_small.json"
    chrome = {e.key: e for e in read_split(split) if e.domain == "chrome"}
    pytester.makeini("[pytest]\n")  # the rootdir is pytester's folder, not the shared examples
    reports = pytester.path / "reports"
    result = pytester.runpytest_subprocess(
        str(split),
        "-m",
        "chrome",
        "--osworld-agent",
        "null",
        "-p",
        "no:cacheprovider",
        "--osworld-report-dir",
        str(reports),
        "--osworld-run-id",
        "null-chrome",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) == 0, result.stdout.str()
    records = _records(reports / "null-chrome")
    assert set(records) == set(chrome)
    for key, record in records.items():
        assert record["success"] is not True, (key, record["message"])
        if record["masked"]:
            # Only a site that did not load may mask a chrome task here: named, with its step.
            urls = [
                u for s in chrome[key].task.config if s.type == "chrome_open_tabs" for u in s.parameters.urls_to_open
            ]
            assert record["termination"] == "setup_error", (key, record["message"])
            assert "(chrome_open_tabs): the guest's browser cannot load " in record["message"]
            assert any(f"cannot load {u}:" in record["message"] for u in urls), record["message"]
        else:
            assert record["score"] == 0.0, (key, record["message"])
    cookie = records[COOKIE_TASK]
    assert cookie["masked"] or cookie["score"] == 0.0  # never 1 for a site that was never visited
