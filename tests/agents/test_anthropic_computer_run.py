"""The anthropic-computer runner in one real run: its share of the bundled v1 tasks
(tests/support/native_runs.py) against a server that speaks Anthropic's Messages API with the computer tool
(computer_20251124, zoom declared), plus the failure cases."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.guest.client import PYAUTOGUI_PREFIX
from tests.support.anthropic_server import AnthropicScript
from tests.support.native_runs import (
    GROUP,
    NativeRun,
    assert_bundled_tasks_score_as_with_the_oracle,
    assert_cases_go_on,
    assert_no_key_anywhere,
    assert_overloaded_retried_then_masked,
    native_run,
)

pytestmark = [pytest.mark.docker, pytest.mark.xdist_group(GROUP)]

CASES = ("nonsense", "unknown", "refusal", "cut", "overloaded", "overloaded_forever", "look")


@pytest.fixture(scope="module")
def native(shared_runs_root: Path) -> NativeRun:
    def script(tasks: list[dict[str, Any]]) -> AnthropicScript:
        return AnthropicScript(tasks, version="computer_20251124")

    return native_run(
        shared_runs_root,
        "anthropic-computer",
        "claude-test",
        script,
        CASES,
        "--osworld-anthropic-tool",
        "computer_20251124",
    )


def test_every_bundled_task_scores_as_with_the_oracle(native: NativeRun) -> None:
    assert_bundled_tasks_score_as_with_the_oracle(native)
    assert native.problems == []  # no request broke the protocol
    record = native.record("libreoffice_calc/calc-sum-units")
    assert record["runner"] == "anthropic-computer" and record["model"]["api"] == "anthropic"
    calls = record["usage"]["prompt_tokens"] // 100
    assert record["usage"] == {
        "prompt_tokens": 100 * calls,
        "completion_tokens": 20 * calls,
        "cost": pytest.approx(calls * (100 * 3 + 20 * 15) / 1e6),
    }
    # A solution step of several key presses is one answer of several tool_use blocks, run in order,
    # each recorded with the model's input and its screen coordinates.
    several = native.first_step_of_several_actions("libreoffice_calc/calc-sum-units")
    assert [s["action"]["call"]["action"] for s in several] == ["key", "key", "key"]
    assert several[1]["action"]["call"]["text"] == "Down Down Down Down Down"
    # The solution's click at (960, 600) on the screen: the model's point on the 1429x804 screenshot, and
    # where it lands back on the screen (the coordinate round trip itself: test_native_frames.py).
    (clicked,) = [s["action"] for s in native.traj("multi_apps/multi-poem-to-writer") if _action(s) == "left_click"]
    assert clicked["call"]["coordinate"] == [714, 447]
    assert clicked["screen"] == [list(Frame(screen=(1920, 1080), image=(1429, 804)).to_screen(714, 447))]


def test_plain_python_steps_go_through_a_terminal_that_closes_itself(native: NativeRun) -> None:
    typed = [s["action"]["call"] for s in native.traj("os/os-make-executable") if isinstance(s["action"], dict)]
    assert typed[0] == {"action": "key", "text": "ctrl+alt+t"}
    command = next(c["text"] for c in typed if c["action"] == "type")
    assert command.startswith(
        f"python3 - <<'EOF'\n{PYAUTOGUI_PREFIX}\nimport os, stat; p = '/home/user/Desktop/backup.sh'"
    )
    assert command.endswith("EOF\nexit\n")


def test_a_timed_wait_is_slept_by_the_harness_not_run_in_the_guest(native: NativeRun) -> None:
    waits = [s for key in native.keys for s in native.traj(key) if _action(s) == "wait"]
    assert waits, "the scripted model waits for the terminal"
    for step in waits:
        seconds = step["action"]["call"]["duration"]
        # No guest program ran (a code action records its status), and the wait was as long as asked.
        assert step.get("execute_status") is None and step["execute_seconds"] >= seconds, step


def test_failure_cases_are_recorded_and_the_episode_goes_on(native: NativeRun) -> None:
    why = {
        "nonsense": "coordinate must be [x, y]",
        "unknown": "unknown action 'teleport'",
        "refusal": "the model refused to answer (stop reason refusal)",
        "cut": "the answer was cut off at the token limit (stop reason max_tokens)",
    }
    assert_cases_go_on(native, why)
    answered = native.notes("case-nonsense")["answers"]
    assert answered == [{"action": "left_click", "error": True, "texts": [answered[0]["texts"][0]], "images": []}]


def test_overloaded_answers_are_retried_after_retry_after_then_masked(native: NativeRun) -> None:
    assert_overloaded_retried_then_masked(native, 529)


def test_screenshot_cursor_position_and_zoom_answer_without_acting(native: NativeRun) -> None:
    first, second = native.traj("os/case-look")
    assert first["action"] is None and first["parse_error"] is None and second["action"] == "FAIL"  # nothing ran
    assert [c["call"]["action"] for c in first["tool_calls"]] == ["screenshot", "cursor_position", "zoom"]
    assert first["tool_calls"][2]["screen"] == [[0, 0], [480, 270]]
    answers = native.notes("case-look")["answers"]
    assert [a["images"] for a in answers] == [[[1429, 804]], [], [[1429, 804]]]  # kept as JSON
    assert answers[1]["texts"][0].startswith("X=")


def test_the_key_never_reaches_a_record_report_or_output(native: NativeRun) -> None:
    assert_no_key_anywhere(native)
    assert (native.run_dir / "os" / "case-look" / "model_io.jsonl").is_file()


def _action(step: dict[str, Any]) -> str | None:
    action = step["action"]
    return action["call"].get("action") if isinstance(action, dict) and isinstance(action.get("call"), dict) else None
