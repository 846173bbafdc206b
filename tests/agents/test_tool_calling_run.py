"""The tool-calling runner in one real run: its share of the bundled v1 tasks (tests/support/native_runs.py)
against an OpenAI-compatible chat server that calls one computer function (parallel tool calls, terminate),
plus the failure cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.native_runs import (
    GROUP,
    NativeRun,
    assert_bundled_tasks_score_as_with_the_oracle,
    assert_cases_go_on,
    assert_no_key_anywhere,
    assert_overloaded_retried_then_masked,
    native_run,
)
from tests.support.tool_calling_server import ToolCallingScript

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group(GROUP)]

CASES = ("nonsense", "unknown", "refusal", "cut", "overloaded", "overloaded_forever", "look")


@pytest.fixture(scope="module")
def native(shared_runs_root: Path) -> NativeRun:
    return native_run(shared_runs_root, "tool-calling", "vlm-test", ToolCallingScript, CASES)


def test_every_bundled_task_scores_as_with_the_oracle(native: NativeRun) -> None:
    assert_bundled_tasks_score_as_with_the_oracle(native)
    assert native.problems == []
    # Parallel tool calls of one answer ran in order, each its own action line of the step.
    steps = native.first_step_of_several_actions("libreoffice_calc/calc-sum-units")
    assert [s["action"]["call"]["text"] for s in steps] == ["ctrl+Home", "Down Down Down Down Down", "Right"]
    assert native.record("os/os-refresh-rate")["termination"] == "fail"  # terminate with status failure


def test_failure_cases_are_recorded_and_the_episode_goes_on(native: NativeRun) -> None:
    why = {
        "nonsense": "the arguments are not valid JSON",
        "unknown": "unknown action 'teleport'",
        "refusal": "the model refused to answer (stop reason stop): I can't help with that.",
        "cut": "cut off at the token limit (stop reason length)",
    }
    assert_cases_go_on(native, why)


def test_overloaded_answers_are_retried_after_retry_after_then_masked(native: NativeRun) -> None:
    assert_overloaded_retried_then_masked(native, 503)


def test_screenshot_cursor_position_and_zoom_answer_without_acting(native: NativeRun) -> None:
    first, _ = native.traj("os/case-look")
    assert first["action"] is None and first["parse_error"] is None
    assert native.notes("case-look")["answers"][1].startswith("X=")


def test_the_key_never_reaches_a_record_report_or_output(native: NativeRun) -> None:
    assert_no_key_anywhere(native)
