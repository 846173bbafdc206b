"""The anthropic-computer runner against a local server that speaks Anthropic's Messages API (no Docker)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_osworld.agents.base import Observation
from pytest_osworld.agents.native.anthropic import AnthropicComputerRunner
from pytest_osworld.models.base import ModelError
from tests.agents.native_helpers import observe, play, png, runner, task, tasks
from tests.support.anthropic_server import AnthropicScript, display_size
from tests.support.model_server import Json, ModelServer, Status

CASES = ("nonsense", "unknown", "refusal", "cut", "look")
EVERY = tasks(*CASES)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(models=["claude-test"]) as running:
        yield running


def serve(server: ModelServer, version: str = "computer_20251124", **kwargs: object) -> AnthropicScript:
    script = AnthropicScript(EVERY, version=version, **kwargs)  # type: ignore[arg-type]
    server.respond_with("claude-test", script)
    return script


def claude(server: ModelServer, task_json: dict[str, Any], **settings: Any) -> AnthropicComputerRunner:
    """The runner with the newer tool (zoom) unless the settings name another."""
    agent = runner("anthropic-computer", server, task_json, **{"anthropic_tool": "computer_20251124", **settings})
    assert isinstance(agent, AnthropicComputerRunner)
    return agent


@pytest.mark.parametrize(
    ("version", "beta", "zoom"),
    [("computer_20250124", "computer-use-2025-01-24", False), ("computer_20251124", "computer-use-2025-11-24", True)],
)
def test_each_tool_version_goes_with_its_beta_header_and_the_scaled_display(
    server: ModelServer, version: str, beta: str, zoom: bool
) -> None:
    script = serve(server, version)
    calc = task("calc-sum-units", EVERY)
    decisions = play(claude(server, calc, anthropic_tool=version), calc["instruction"])
    assert script.conversations.problems == []
    assert [d.actions[-1].kind for d in decisions][-1] == "DONE"
    first = server.completions()[0]
    assert first.headers["anthropic-beta"] == beta and first.headers["anthropic-version"] == "2023-06-01"
    (tool,) = first.body["tools"]
    assert (tool["type"], tool["name"], tool["display_width_px"], tool["display_height_px"]) == (
        version,
        "computer",
        *display_size(1920, 1080),
    )
    assert tool.get("enable_zoom", False) is zoom
    assert "1429x804" in first.body["system"] and "the task is infeasible" in first.body["system"]


def test_several_tool_uses_of_one_answer_run_in_order_and_are_each_answered(server: ModelServer) -> None:
    serve(server)
    calc = task("calc-sum-units", EVERY)
    decisions = play(claude(server, calc), calc["instruction"])
    keys = decisions[1]
    assert [a.code for a in keys.actions] == [
        "pyautogui.hotkey('ctrl', 'home')",
        "\n".join(["pyautogui.press('down')"] * 5),
        "pyautogui.press('right')",
    ]
    assert [a.raw["call"]["text"] for a in keys.actions] == ["ctrl+Home", "Down Down Down Down Down", "Right"]
    answers = [b for b in server.completions()[2].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [a["tool_use_id"] for a in answers] == [c["id"] for c in keys.details["tool_calls"]]
    assert [len(a["content"]) for a in answers] == [1, 1, 2]  # the screen after the step goes with the last
    assert keys.details["stop_reason"] == "tool_use"


def test_only_the_last_screenshots_stay_in_the_conversation(server: ModelServer) -> None:
    serve(server, keep_images=2)
    calc = task("calc-sum-units", EVERY)
    play(claude(server, calc, history_images=2), calc["instruction"])
    last = server.completions()[-1].body["messages"]
    texts = json.dumps(last)
    assert texts.count('"type": "image"') == 2 and "an earlier screenshot, removed" in texts


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("nonsense", "coordinate must be [x, y]"),
        ("unknown", "unknown action 'teleport'"),
        ("refusal", "the model refused to answer (stop reason refusal)"),
        ("cut", "cut off at the token limit (stop reason max_tokens)"),
    ],
)
def test_an_unusable_answer_spends_the_step_and_the_episode_goes_on(
    server: ModelServer, case: str, problem: str
) -> None:
    script = serve(server)
    case_task = task(f"case-{case}", EVERY)
    first, second = play(claude(server, case_task), case_task["instruction"])
    assert first.actions == [] and first.parse_error is not None and problem in first.parse_error
    assert [a.kind for a in second.actions] == ["FAIL"]  # the text says the task is infeasible
    assert script.conversations.problems == []  # a dropped turn was left out, an error answered with is_error
    if case in ("refusal", "cut"):
        assert len(server.completions()[1].body["messages"]) == 1  # the dropped turn is gone


def test_screenshot_cursor_and_zoom_are_answered_from_the_screen_without_acting(server: ModelServer) -> None:
    script = serve(server)
    look = task("case-look", EVERY)
    first, _ = play(claude(server, look), look["instruction"], pointer=lambda: (960, 540))
    assert first.actions == [] and first.parse_error is None
    answers = script.conversations.started["case-look"].notes["answers"]
    assert answers[0]["images"] == [(1429, 804)]
    assert answers[1]["texts"] == ["X=714,Y=402"]  # the pointer in the model's frame
    assert answers[2]["images"] == [(1429, 804)]  # the zoom fills the display


def test_a_cursor_position_without_a_guest_is_an_error_answer(server: ModelServer) -> None:
    script = serve(server)
    look = task("case-look", EVERY)
    play(claude(server, look), look["instruction"])
    cursor = script.conversations.started["case-look"].notes["answers"][1]
    assert cursor["error"] is True and "cannot be read" in cursor["texts"][0]


def test_end_turn_is_done_and_the_infeasible_phrase_is_fail(server: ModelServer) -> None:
    def answer(text: str) -> Json:
        return Json({"content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "usage": {}})

    server.script("claude-test", answer("All set."), answer("Sorry, this is not feasible here."))
    calc = task("calc-sum-units", EVERY)
    assert [a.kind for a in claude(server, calc).predict(observe(calc["instruction"], 0)).actions] == ["DONE"]
    assert [a.kind for a in claude(server, calc).predict(observe(calc["instruction"], 0)).actions] == ["FAIL"]


def test_screenshots_follow_the_max_size_settings_and_usage_is_priced(server: ModelServer) -> None:
    serve(server, display=(1280, 720))
    calc = task("calc-sum-units", EVERY)
    agent = claude(server, calc, screenshot_max_width=1280, prompt_price=3, completion_price=15)
    decision = agent.predict(observe(calc["instruction"], 0))
    assert decision.usage.prompt_tokens == 100 and decision.usage.cost == pytest.approx((100 * 3 + 20 * 15) / 1e6)
    assert server.completions()[0].body["tools"][0]["display_width_px"] == 1280


def test_an_answer_without_content_blocks_is_the_endpoints_failure(server: ModelServer) -> None:
    server.script("claude-test", Json({"type": "message", "stop_reason": "end_turn"}))
    calc = task("calc-sum-units", EVERY)
    with pytest.raises(ModelError, match="no content blocks"):
        claude(server, calc).predict(observe(calc["instruction"], 0))


def test_overloaded_is_retried_with_retry_after(server: ModelServer) -> None:
    script = serve(server)
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    server.script("claude-test", Status(529, overloaded, retry_after=0.3))
    calc = task("calc-sum-units", EVERY)
    decision = claude(server, calc, model_retries=1).predict(observe(calc["instruction"], 0))
    # The answer after the retry: the scripted model first waits for Calc to be up (a timed wait).
    assert [a.kind for a in decision.actions] == ["WAIT"] and script.conversations.problems == []
    first, second = server.completions()
    assert second.at - first.at >= 0.3


def test_model_io_keeps_the_request_with_images_by_size(server: ModelServer) -> None:
    serve(server)
    calc = task("calc-sum-units", EVERY)
    agent = claude(server, calc, keep_model_io=True)
    agent.predict(Observation(calc["instruction"], png(), (1920, 1080), 0))
    system, user = agent.last_messages
    assert '"type": "computer_20251124"' in system.text and "max_tokens" in system.text
    assert user.images and "<image 1>" in user.text
