"""Infrastructure faults end masked, valid zeros stay valid, and what cannot run here is skipped first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest

from pytest_osworld.sandbox import LABEL_RUN_ID
from tests.episode.runs import run_tasks
from tests.support.paths import REPO
from tests.support.taskfactory import task, write_jsonl

pytestmark = pytest.mark.docker


def _task(task_id: str, **extra: Any) -> dict[str, Any]:
    base = task(task_id, config=[], solution=["DONE"])
    base.update(extra)
    return base


def _containers(run_id: str) -> list[Any]:
    containers: list[Any] = docker.from_env().containers.list(all=True, filters={"label": f"{LABEL_RUN_ID}={run_id}"})
    return containers


def test_a_sandbox_killed_mid_episode_is_masked_and_the_next_task_runs(pytester: pytest.Pytester) -> None:
    # The solution stops the container from inside (PID 1 forwards SIGTERM and the container exits).
    killer = _task("killed", solution=["import subprocess; subprocess.run(['sudo', 'kill', '-TERM', '1'])", "DONE"])
    survivor = _task("after", solution=["DONE"])
    write_jsonl(pytester.path / "t.jsonl", [killer, survivor])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle")
    outcomes = run.result.parseoutcomes()
    assert outcomes.get("masked") == 1 and outcomes.get("passed") == 1, run.result.stdout.str()
    killed = run.record("os/killed")
    assert killed["termination"] == "sandbox_lost" and killed["masked"] is True and killed["score"] is None
    assert run.record("os/after")["score"] == 1.0
    run.result.stdout.fnmatch_lines(["t.jsonl M.*", "*MASKED os/killed: masked (sandbox_lost)*"])
    assert _containers(run.run_id) == []


def test_a_failing_setup_step_is_a_mask(pytester: pytest.Pytester) -> None:
    # A program the sandbox lacks is known before it starts (a skip): this step fails in the guest instead.
    failing = {"command": "echo no-such-file-here >&2; exit 3", "shell": True}
    broken = _task("broken-setup", config=[{"type": "execute", "parameters": failing, "on_nonzero": "mask"}])
    write_jsonl(pytester.path / "t.jsonl", [broken])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle", "--junitxml", "junit.xml")
    assert run.result.parseoutcomes().get("masked") == 1
    record = run.record("os/broken-setup")
    assert record["termination"] == "setup_error" and "no-such-file-here" in record["message"]
    assert record["steps"] == 0  # the agent never ran
    junit = (pytester.path / "junit.xml").read_text()
    assert "<error" in junit and "<failure" not in junit


def test_a_step_declared_score_zero_is_a_valid_zero(pytester: pytest.Pytester) -> None:
    zero = _task(
        "declared-zero",
        config=[{"type": "execute", "parameters": {"command": "exit 3", "shell": True}, "on_nonzero": "score_zero"}],
    )
    write_jsonl(pytester.path / "t.jsonl", [zero])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle")
    run.result.assert_outcomes(failed=1)
    record = run.record("os/declared-zero")
    assert record["score"] == 0.0 and record["masked"] is False and record["success"] is False


def test_a_crashing_metric_is_an_evaluator_error_not_a_zero(pytester: pytest.Pytester) -> None:
    sheet = REPO / "tasks" / "assets" / "calc" / "sales.xlsx"
    crash = _task(
        "crash",
        config=[
            {"type": "upload_file", "parameters": {"files": [{"local_path": str(sheet), "path": "/home/user/s.xlsx"}]}}
        ],
        evaluator={
            "func": "compare_table",
            "result": {"type": "vm_file", "path": "/home/user/s.xlsx", "dest": "s.xlsx"},
            "options": {"rules": [{"type": "no_such_rule_kind"}]},
        },
    )
    write_jsonl(pytester.path / "t.jsonl", [crash])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle")
    assert run.result.parseoutcomes().get("masked") == 1
    record = run.record("os/crash")
    assert record["termination"] == "evaluator_error" and record["score"] is None


def test_what_cannot_run_here_is_skipped_before_any_sandbox(pytester: pytest.Pytester) -> None:
    unknown_metric = _task("unknown-metric", evaluator={"func": "no_such_metric_anywhere"})
    gdrive = _task(
        "gdrive",
        domain="multi_apps",
        config=[{"type": "googledrive", "parameters": {"settings_file": "settings.json"}}],
    )
    no_solution = _task("no-solution")
    del no_solution["solution"]
    write_jsonl(pytester.path / "t.jsonl", [unknown_metric, gdrive, no_solution])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle", "-rs")
    run.result.assert_outcomes(skipped=3)
    text = run.result.stdout.str()
    assert "no_such_metric_anywhere" in text
    assert "Google" in text or "credentials" in text
    assert "no reference solution" in text
    for key in ("os/unknown-metric", "multi_apps/gdrive", "os/no-solution"):
        record = run.record(key)
        assert record["termination"] == "unsupported", key
        assert not record["sandbox"], key  # no sandbox was started for it
    assert _containers(run.run_id) == []


def test_an_interrupted_session_records_the_running_task(pytester: pytest.Pytester, tmp_path: Path) -> None:
    slow = _task("slow", solution=["x = 1", "time.sleep(60)", "DONE"])  # traj.jsonl appears after step 1
    write_jsonl(pytester.path / "t.jsonl", [slow])
    reports = pytester.path / "reports"
    proc = pytester.popen(
        [
            "python3",
            "-m",
            "pytest",
            "t.jsonl",
            "-p",
            "no:cacheprovider",
            "--osworld-agent",
            "oracle",
            "--osworld-report-dir",
            str(reports),
            "--osworld-run-id",
            "int",
        ],
        stdout=open(tmp_path / "out.txt", "w"),  # noqa: SIM115 - the child holds it until it ends
        stderr=open(tmp_path / "err.txt", "w"),  # noqa: SIM115
    )
    traj = reports / "int" / "os" / "slow" / "traj.jsonl"
    import time

    deadline = time.monotonic() + 120
    while not traj.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)  # poll for the episode to be under way
    assert proc.poll() is None, (tmp_path / "out.txt").read_text()
    import signal

    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    record = json.loads((reports / "int" / "os" / "slow" / "result.json").read_text())
    assert record["termination"] == "interrupted" and record["masked"] is True
    assert _containers("int") == []


def test_a_metric_missing_a_library_for_its_options_skips_the_task(pytester: pytest.Pytester) -> None:
    # A project's own metric, registered from its conftest, whose options need a library not installed.
    pytester.makeconftest(
        """
        from pytest_osworld.errors import EvaluatorUnavailable
        from pytest_osworld.evaluation.metrics import metric

        @metric("needs_a_library_for_this_option")
        def needs_a_library_for_this_option(result, expected=None, **options):
            if options.get("fancy"):
                raise EvaluatorUnavailable("needs pip install some-missing-package")
            return 1.0
        """
    )
    fancy = _task(
        "fancy",
        evaluator={
            "func": "needs_a_library_for_this_option",
            "result": {"type": "vm_command_line", "command": "echo ok", "shell": True},
            "options": {"fancy": True},
        },
    )
    plain = _task("plain", evaluator={**fancy["evaluator"], "options": {}})
    write_jsonl(pytester.path / "t.jsonl", [fancy, plain])
    run = run_tasks(pytester, pytester.path / "t.jsonl", "--osworld-agent", "oracle", "-rs")
    run.result.assert_outcomes(passed=1, skipped=1)
    assert "some-missing-package" in run.result.stdout.str()
    record = run.record("os/fancy")
    assert record["termination"] == "unsupported" and record["score"] is None and record["masked"] is False
