"""The openai-computer runner in one real run: its share of the bundled v1 tasks (tests/support/native_runs.py)
against a server that speaks OpenAI's Responses API with the computer_use_preview tool (chained by
previous_response_id), plus the failure cases."""

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
from tests.support.openai_computer_server import OpenAIComputerScript

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group(GROUP)]

CASES = ("nonsense", "unknown", "refusal", "cut", "overloaded", "overloaded_forever", "safety", "look")


@pytest.fixture(scope="module")
def native(shared_runs_root: Path) -> NativeRun:
    return native_run(shared_runs_root, "openai-computer", "computer-use-preview", OpenAIComputerScript, CASES)


def test_every_bundled_task_scores_as_with_the_oracle(native: NativeRun) -> None:
    assert_bundled_tasks_score_as_with_the_oracle(native)
    assert native.problems == []
    record = native.record("libreoffice_calc/calc-sum-units")
    assert record["runner"] == "openai-computer" and record["model"]["api"] == "openai"
    keys = [
        s["action"]["call"] for s in native.traj("libreoffice_calc/calc-sum-units") if isinstance(s["action"], dict)
    ]
    assert {"type": "keypress", "keys": ["ARROWDOWN"]} in keys  # one chord per computer_call, as the model sends


def test_a_safety_check_without_permission_ends_the_episode_recorded_as_such(native: NativeRun) -> None:
    record = native.record("os/case-safety")
    # Ended by the stop before the task's FAIL: the infeasible task scores 0, a valid score (not masked).
    assert (record["score"], record["termination"], record["masked"]) == (0.0, "done", False)
    assert record["message"].startswith(
        "the runner stopped the episode after 1 step(s): the model asked to acknowledge"
    )
    (step,) = native.traj("os/case-safety")
    assert step["done"] is True and "malicious_instructions" in step["stop"]
    assert step["tool_calls"][0]["call"] == {"type": "click", "button": "left", "x": 960, "y": 540}


def test_a_refusal_ends_the_turn_and_the_other_cases_go_on(native: NativeRun) -> None:
    refused = native.record("os/case-refusal")
    assert (refused["score"], refused["termination"]) == (0.0, "done") and "refused" in refused["message"]
    why = {
        "nonsense": "x, y must be [x, y]",
        "unknown": "unknown action 'teleport'",
        "cut": "cut off at the token limit (stop reason max_output_tokens)",
    }
    assert_cases_go_on(native, why)


def test_rate_limits_are_retried_after_retry_after_then_masked(native: NativeRun) -> None:
    assert_overloaded_retried_then_masked(native, 429)


def test_a_screenshot_call_answers_without_acting(native: NativeRun) -> None:
    first, second = native.traj("os/case-look")
    assert first["action"] is None and first["parse_error"] is None and second["action"] == "FAIL"
    assert first["tool_calls"][0]["call"] == {"type": "screenshot"}


def test_the_key_never_reaches_a_record_report_or_output(native: NativeRun) -> None:
    assert_no_key_anywhere(native)
