"""The uitars runner in one real run: its share of the bundled v1 tasks (tests/support/native_runs.py) against
an OpenAI-compatible chat server answering in UI-TARS's grammar (absolute coordinates on the smart_resized
screenshot), plus the failure cases."""

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
from tests.support.uitars_server import UITarsScript

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group(GROUP)]

CASES = ("nonsense", "unknown", "refusal", "cut", "overloaded", "overloaded_forever")


@pytest.fixture(scope="module")
def native(shared_runs_root: Path) -> NativeRun:
    return native_run(shared_runs_root, "uitars", "ui-tars", UITarsScript, CASES)


def test_every_bundled_task_scores_as_with_the_oracle(native: NativeRun) -> None:
    assert_bundled_tasks_score_as_with_the_oracle(native)
    assert native.problems == []
    (click,) = [
        s["action"]
        for s in native.traj("multi_apps/multi-poem-to-writer")
        if isinstance(s["action"], dict) and "click(" in s["action"]["call"]
    ]
    # The solution's (960, 600) on the 1932x1092 smart_resized screenshot, and back on the screen.
    assert click["call"] == "click(start_box='<|box_start|>(966,607)<|box_end|>')" and click["screen"] == [[960, 600]]
    assert native.record("os/os-refresh-rate")["termination"] == "fail"  # call_user() on a v1 task, as OSWorld's agent


def test_failure_cases_are_recorded_and_the_episode_goes_on(native: NativeRun) -> None:
    why = {
        "nonsense": "the answer has no 'Action:' line",
        "unknown": "unknown action 'teleport'",
        "refusal": "the model refused to answer (stop reason content_filter)",
        "cut": "cut off at the token limit (stop reason length)",
    }
    assert_cases_go_on(native, why)


def test_overloaded_answers_are_retried_after_retry_after_then_masked(native: NativeRun) -> None:
    assert_overloaded_retried_then_masked(native, 529)


def test_the_key_never_reaches_a_record_report_or_output(native: NativeRun) -> None:
    assert_no_key_anywhere(native)
