"""Allure results under xdist, pytest-html extras, and the summary on the xdist controller."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from tests.results.helpers import BASE_ARGS, PNG, make_project, task_line

pytestmark = pytest.mark.docker

SECRET = "qq-another-secret-value-7"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("OSWORLD_TEST_FLIP", raising=False)
    monkeypatch.setenv("OSWORLD_TEST_SECRET", SECRET)
    make_project(pytester)
    return pytester


def allure_results(folder: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in folder.glob("*-result.json"):
        data = json.loads(path.read_text())
        found[data["name"]] = data
    return found


def labels(result: dict[str, Any], name: str) -> list[str]:
    return sorted(label["value"] for label in result["labels"] if label["name"] == name)


def test_allure_statuses_steps_and_attachments_under_xdist(project: pytest.Pytester) -> None:
    alluredir = project.path / "allure-results"
    result = project.runpytest_subprocess(
        "tasks.jsonl", *BASE_ARGS, "-n", "2", "--osworld-run-id", "r1", f"--alluredir={alluredir}"
    )
    assert result.ret == 1
    found = allure_results(alluredir)
    assert {name: r["status"] for name, r in found.items()} == {
        "os/pass-1": "passed",
        "os/fail-1": "failed",
        "chrome/mask-1": "broken",
        "chrome/sbx-1": "broken",
        "chrome/skip-1": "skipped",
    }
    passed = found["os/pass-1"]
    assert labels(passed, "feature") == ["os"]
    assert labels(passed, "story") == ["terminal"]
    assert labels(passed, "task_id") == ["pass-1"]
    assert labels(passed, "parentSuite") == ["osworld run r1"]
    assert "run:r1" in labels(passed, "tag")
    assert "needs_gdrive" in labels(found["chrome/skip-1"], "tag")
    assert {r["labels"][0]["value"] for r in found.values()}  # every result has labels
    # Each page reads as its task: the instruction as description, the score among the parameters.
    for name, r in found.items():
        assert r["description"].startswith(f"do {name.split('/')[1]}\n"), name
        assert "score" in {p["name"] for p in r["parameters"]}, name
    assert {p["name"]: p["value"] for p in passed["parameters"]}["score"] == "1"

    steps = passed["steps"]
    assert [s["name"] for s in steps] == ["step 1: pyautogui.click(1, 1)", "step 2: pyautogui.click(2, 2)"]
    for s in steps:
        kinds = {a["name"]: a["type"] for a in s["attachments"]}
        assert kinds["screenshot step " + s["name"].split()[1].rstrip(":")] == "image/png"
        assert kinds["model response"] == "text/plain"
    attached = {a["name"]: a for a in passed["attachments"]}
    assert attached["final screenshot"]["type"] == "image/png"
    assert (alluredir / attached["final screenshot"]["source"]).read_bytes() == PNG
    trajectory = json.loads((alluredir / attached["trajectory"]["source"]).read_text())
    assert [s["step_num"] for s in trajectory] == [1, 2]
    assert json.loads((alluredir / attached["result"]["source"]).read_text())["score"] == 1.0
    assert "could not start the desktop" in found["chrome/sbx-1"]["statusDetails"]["message"]
    for path in alluredir.iterdir():
        assert SECRET not in path.read_text(errors="replace"), path.name
    assert len(list(alluredir.glob("*-attachment.png"))) == 3 * 3  # pass, fail, mask: 2 steps + final each

    # The controller received the outcomes from the workers and summarized the records on disk.
    result.stdout.fnmatch_lines(["*osworld summary*", "*all*success*1/4*", "*MASKED chrome/sbx-1*"])
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "skipped": 1, "masked": 2}
    summary = json.loads((project.path / "reports" / "r1" / "summary.json").read_text())
    assert summary["integrity"]["recorded"] == 5
    assert {
        json.loads(p.read_text())["worker"] for p in (project.path / "reports" / "r1").glob("chrome/sbx-1/result.json")
    } <= {"gw0", "gw1"}


def test_junit_under_xdist_gets_errors_for_masks(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("tasks.jsonl", *BASE_ARGS, "-n", "2", "--junitxml=j.xml")
    assert result.ret == 1
    text = (project.path / "j.xml").read_text()
    assert 'errors="2"' in text and 'failures="1"' in text and 'skipped="1"' in text


def test_no_allure_files_without_alluredir(project: pytest.Pytester) -> None:
    result = project.runpytest("tasks.jsonl", *BASE_ARGS, "--osworld-run-id", "r1")
    assert result.parseoutcomes()["passed"] == 1
    assert not list(project.path.rglob("*-result.json"))


def test_html_report_has_the_score_column_and_the_final_screenshot(project: pytest.Pytester) -> None:
    importlib.import_module("pytest_html")
    report = project.path / "html" / "report.html"
    result = project.runpytest("tasks.jsonl", *BASE_ARGS, "--osworld-run-id", "r1", f"--html={report}")
    assert result.ret == 1
    text = report.read_text()
    assert 'data-column-type="osworld_score"' in text and "Score" in text
    assert "col-osworld_score\\&#34;&gt;0.5&lt;" in text  # the failed task's row
    assert "col-osworld_ending\\&#34;&gt;sandbox_error&lt;" in text
    assets = sorted(p.name for p in (project.path / "html" / "assets").iterdir())
    assert "tasks.jsonl__os_pass-1_0_0.png" in assets or any(a.endswith(".png") and "pass" in a for a in assets)
    pngs = list((project.path / "html" / "assets").glob("*.png"))
    assert len(pngs) == 3 and all(p.read_bytes() == PNG for p in pngs)


def test_an_unexpected_crash_is_masked_with_its_record(project: pytest.Pytester) -> None:
    project.path.joinpath("tasks.jsonl").write_text(task_line("crash-1", "os", "crash") + "\n")
    result = project.runpytest("tasks.jsonl", *BASE_ARGS, "--osworld-run-id", "r1", "--junitxml=j.xml")
    assert result.parseoutcomes() == {"masked": 1}
    saved = json.loads((project.path / "reports" / "r1" / "os" / "crash-1" / "result.json").read_text())
    assert saved["termination"] == "harness_error"
    assert saved["message"] == "RuntimeError: a bug in an episode extension"
    result.stdout.fnmatch_lines(["*RuntimeError: a bug in an episode extension*"])  # its traceback, to fix it
    assert "<error" in (project.path / "j.xml").read_text()
