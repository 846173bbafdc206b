"""The plugin's outcomes in real pytest runs: terminal, JUnit, records, secrets, the gate and resume."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.results.helpers import BASE_ARGS, TASKS, make_project, task_line

SECRET = "zz-top-secret-value-42"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("OSWORLD_TEST_SECRET", SECRET)
    monkeypatch.delenv("OSWORLD_TEST_FLIP", raising=False)
    make_project(pytester)
    return pytester


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("tasks.jsonl", *BASE_ARGS, *args)


def records(run_dir: Path) -> dict[str, dict[str, Any]]:
    return {
        f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text())
        for p in run_dir.glob("*/*/result.json")
        if not p.parent.parent.name.startswith("_")
    }


@pytest.mark.docker
def test_outcomes_in_the_terminal(project: pytest.Pytester) -> None:
    result = run(project, "--osworld-run-id", "r1", "-v")
    assert result.ret == 1
    assert result.parseoutcomes() == {"passed": 1, "failed": 1, "skipped": 1, "masked": 2}
    result.stdout.fnmatch_lines(
        [
            "*os/pass-1 PASSED*",
            "*os/fail-1 FAILED*",
            "*chrome/mask-1 MASKED*",
            "*chrome/sbx-1 MASKED*",
            "*chrome/skip-1 SKIPPED (needs Google Drive credentials)*",
        ]
    )
    result.stdout.fnmatch_lines(["*score 0.5: the agent said DONE*"])
    result.stdout.fnmatch_lines(["*osworld summary*", "*all*success*1/4*25.0%*raw*1.5/4*37.5%*"])
    result.stdout.fnmatch_lines(["*MASKED chrome/sbx-1: masked (sandbox_error): could not start the desktop*"])
    assert "Traceback" not in result.stdout.str()

    quiet = run(project, "--osworld-run-id", "r2")
    quiet.stdout.fnmatch_lines(["tasks.jsonl .FMMs*"])


@pytest.mark.docker
def test_records_for_every_outcome(project: pytest.Pytester) -> None:
    run(project, "--osworld-run-id", "r1")
    run_dir = project.path / "reports" / "r1"
    recs = records(run_dir)
    assert {k: (r["termination"], r["score"]) for k, r in recs.items()} == {
        "os/pass-1": ("done", 1.0),
        "os/fail-1": ("done", 0.5),
        "chrome/mask-1": ("model_error", None),
        "chrome/sbx-1": ("sandbox_error", None),
        "chrome/skip-1": ("unsupported", None),
    }
    assert recs["chrome/skip-1"]["message"] == "needs Google Drive credentials"
    assert "needs_gdrive" in recs["chrome/skip-1"]["markers"]
    assert recs["chrome/sbx-1"]["message"].startswith("could not start the desktop")
    assert (run_dir / "os" / "fail-1" / "result.txt").read_text() == "0.5\n"
    assert not (run_dir / "chrome" / "mask-1" / "result.txt").exists()
    assert (run_dir / "os" / "pass-1" / "step_2.png").is_file()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["integrity"]["selected"] == 5 and summary["integrity"]["missing"] == []
    assert summary["masks"] == {"model_error": 1, "sandbox_error": 1}
    assert summary["views"]["no_gdrive"]["skipped"] == 0  # the Drive task is out of that view entirely


@pytest.mark.docker
def test_junit_error_for_a_mask_failure_for_a_low_score_and_the_score_property(project: pytest.Pytester) -> None:
    run(project, "--osworld-run-id", "r1", "--junitxml=junit.xml")
    cases = {c.get("name"): c for c in ET.parse(project.path / "junit.xml").getroot().iter("testcase")}

    def props(name: str) -> dict[str | None, str | None]:
        return {p.get("name"): p.get("value") for p in cases[name].iter("property")}

    assert cases["os/pass-1"].find("failure") is None and cases["os/pass-1"].find("error") is None
    assert props("os/pass-1") == {"osworld_status": "passed", "osworld_termination": "done", "osworld_score": "1"}
    failure = cases["os/fail-1"].find("failure")
    assert failure is not None and "score 0.5" in failure.get("message", "")
    assert props("os/fail-1")["osworld_score"] == "0.5"
    for name, reason in (("chrome/mask-1", "model_error"), ("chrome/sbx-1", "sandbox_error")):
        error = cases[name].find("error")
        assert error is not None and cases[name].find("failure") is None, name
        assert f"masked ({reason})" in error.get("message", "")
        assert props(name) == {"osworld_status": "masked", "osworld_termination": reason}
    assert cases["chrome/skip-1"].find("skipped") is not None


@pytest.mark.docker
def test_secrets_reach_no_report(project: pytest.Pytester) -> None:
    result = run(project, "--osworld-run-id", "r1", "--junitxml=junit.xml", "-rA")
    assert SECRET not in result.stdout.str()
    assert SECRET not in (project.path / "junit.xml").read_text()
    for path in (project.path / "reports").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".jsonl", ".txt"):
            assert SECRET not in path.read_text(), path


@pytest.mark.docker
def test_the_gate_decides_the_exit_status(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(project, "--osworld-run-id", "base").ret == 1  # tasks failed, no gate
    baseline = project.path / "reports" / "base" / "summary.json"
    monkeypatch.setenv("OSWORLD_TEST_FLIP", "pass-1")  # pass-1 now fails: all view 25% -> 0%

    fixed = ("--osworld-gate", "fixed")
    held = run(
        project, "--osworld-run-id", "n1", "--osworld-baseline", str(baseline), "--osworld-max-drop", "30", *fixed
    )
    assert held.ret == 0
    held.stdout.fnmatch_lines(["*osworld gate*", "gate: HELD, exit status 0", "*pass -> fail (1): os/pass-1*"])

    failed = run(
        project, "--osworld-run-id", "n2", "--osworld-baseline", str(baseline), "--osworld-max-drop", "2", *fixed
    )
    assert failed.ret == 1
    failed.stdout.fnmatch_lines(["gate: FAILED, exit status 1", "*dropped 25.0 points*pass -> fail: os/pass-1*"])
    gate = json.loads((project.path / "reports" / "n2" / "summary.json").read_text())["gate"]
    assert gate["held"] is False and gate["comparison"]["pass_to_fail"][0]["key"] == "os/pass-1"

    # The default, paired gate: one task of two (masks left out) is no evidence; the drop is within noise.
    noise = run(project, "--osworld-run-id", "n4", "--osworld-baseline", str(baseline), "--osworld-max-drop", "2")
    assert noise.ret == 0
    noise.stdout.fnmatch_lines(
        ["gate: HELD, exit status 0", "*drop 50.0 points, p = 1.00: not significant (within noise)*"]
    )
    gate = json.loads((project.path / "reports" / "n4" / "summary.json").read_text())["gate"]
    assert gate["held"] is True and gate["paired"]["p_value"] == 1.0 and gate["comparison"] is None

    masks = run(
        project,
        "--osworld-run-id",
        "n3",
        "--osworld-baseline",
        str(baseline),
        "--osworld-max-drop",
        "30",
        "--osworld-max-masked",
        "1",
    )
    assert masks.ret == 1
    masks.stdout.fnmatch_lines(["gate: FAILED (infrastructure)*", "*infrastructure problem: 2 masked tasks exceed*"])


def test_gate_option_errors_are_usage_errors(project: pytest.Pytester) -> None:
    result = run(project, "--osworld-max-drop", "2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--osworld-max-drop needs --osworld-baseline*"])
    result = run(project, "--osworld-baseline", "missing.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--osworld-baseline: *missing.json: no such file*"])


@pytest.mark.docker
def test_resume_runs_only_masked_skipped_and_missing_tasks(project: pytest.Pytester) -> None:
    run(project, "--osworld-run-id", "r1", "-k", "not sbx")  # sbx-1 never runs: missing
    run_dir = project.path / "reports" / "r1"
    first_pass = (run_dir / "os" / "pass-1" / "result.json").read_text()

    result = run(project, "--osworld-resume", str(run_dir), "-v")
    outcomes = result.parseoutcomes()
    assert outcomes == {"deselected": 2, "masked": 2, "skipped": 1}
    result.stdout.fnmatch_lines(
        [
            "*collected 5 items / 2 deselected / 3 selected*",
            "*chrome/mask-1 MASKED*",
            "*chrome/sbx-1 MASKED*",
            "*chrome/skip-1 SKIPPED*",
        ]
    )
    assert (run_dir / "os" / "pass-1" / "result.json").read_text() == first_pass  # kept, not re-run
    assert (run_dir / "_superseded" / "chrome" / "mask-1" / "1" / "result.json").is_file()
    assert set(records(run_dir)) == {"os/pass-1", "os/fail-1", "chrome/mask-1", "chrome/sbx-1", "chrome/skip-1"}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["integrity"]["resumed"] == ["os/fail-1", "os/pass-1"]
    assert summary["integrity"]["selected"] == 5 and summary["integrity"]["missing"] == []
    result.stdout.fnmatch_lines(["*integrity*5 selected, 5 recorded, 0 missing*2 resumed*"])
    assert not (project.path / "reports").joinpath("r2").exists()  # the same run folder, no new one


@pytest.mark.docker
def test_resume_with_nothing_left_to_run_succeeds(project: pytest.Pytester) -> None:
    project.path.joinpath("tasks.jsonl").write_text(task_line("pass-1", "os", "score", 1.0) + "\n")
    run(project, "--osworld-run-id", "r1")
    result = run(project, "--osworld-resume", "reports/r1")
    assert result.ret == 0
    assert result.parseoutcomes() == {"deselected": 1}


@pytest.mark.docker
def test_resume_refuses_a_changed_input_or_a_non_run(project: pytest.Pytester) -> None:
    run(project, "--osworld-run-id", "r1")

    def written() -> dict[Path, tuple[bytes, int]]:  # content and write time: a rewrite with equal bytes shows too
        found = (project.path / "reports" / "r1").rglob("*")
        return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in found if p.is_file()}

    files = written()
    project.path.joinpath("tasks.jsonl").write_text(TASKS.replace("do pass-1", "do something else"))
    result = run(project, "--osworld-resume", "reports/r1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the task input changed since that run*"])
    # Refused: the earlier run's files are as they were (its manifest neither restarted nor ended, its
    # summary not written again).
    assert written() == files
    result = run(project, "--osworld-resume", "reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*not a run folder (no manifest.json)*"])


@pytest.mark.docker
def test_repeats_are_kept_apart(project: pytest.Pytester) -> None:
    project.path.joinpath("tasks.jsonl").write_text(task_line("pass-1", "os", "score", 1.0) + "\n")
    result = run(project, "--osworld-run-id", "r1", "--osworld-repeat", "2", "--junitxml=junit.xml")
    assert result.parseoutcomes() == {"passed": 2}
    run_dir = project.path / "reports" / "r1"
    assert set(records(run_dir)) == {"os/pass-1", "os/pass-1#r2"}
    assert records(run_dir)["os/pass-1#r2"]["repeat"] == 2
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["views"]["all"]["episodes"] == 2 and summary["integrity"]["missing"] == []


def test_a_session_without_tasks_writes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain(): pass")
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 0 and "osworld summary" not in result.stdout.str()
    assert not (pytester.path / "reports").exists()


@pytest.mark.docker
def test_diagnostics_settings_reach_the_store(project: pytest.Pytester) -> None:
    project.path.joinpath("tasks.jsonl").write_text(task_line("pass-1", "os", "score", 1.0) + "\n")
    run(project, "--osworld-run-id", "lean", "--osworld-no-keep-screenshots")
    folder = project.path / "reports" / "lean" / "os" / "pass-1"
    assert sorted(p.name for p in folder.iterdir()) == ["final.png", "result.json", "result.txt", "traj.jsonl"]
    assert all(json.loads(line)["screenshot_file"] is None for line in (folder / "traj.jsonl").read_text().splitlines())
    run(project, "--osworld-run-id", "full")
    assert (project.path / "reports" / "full" / "os" / "pass-1" / "step_1.png").is_file()
