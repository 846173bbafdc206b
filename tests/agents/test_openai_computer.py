"""The openai-computer runner against a local server that speaks OpenAI's Responses API (no Docker)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.actions import ActionError
from pytest_osworld.agents.native.openai_computer import parse_cua_action
from pytest_osworld.models.base import ModelError
from tests.agents.native_helpers import observe, play, runner, task, tasks
from tests.support.model_server import Json, ModelServer
from tests.support.openai_computer_server import SAFETY_CHECK, OpenAIComputerScript

CASES = ("nonsense", "unknown", "refusal", "cut", "look", "safety")
EVERY = tasks(*CASES)
SCREEN = Frame(screen=(1920, 1080), image=(1920, 1080))


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(models=["computer-use-preview"]) as running:
        yield running


def serve(server: ModelServer, **kwargs: object) -> OpenAIComputerScript:
    script = OpenAIComputerScript(EVERY, **kwargs)  # type: ignore[arg-type]
    server.respond_with("computer-use-preview", script)
    return script


@pytest.mark.parametrize("chaining", ["previous_response_id", "items"])
def test_a_task_plays_through_chained_turns(server: ModelServer, chaining: str) -> None:
    script = serve(server, chaining=chaining)
    calc = task("calc-sum-units", EVERY)
    decisions = play(runner("openai-computer", server, calc, openai_chaining=chaining), calc["instruction"])
    assert script.conversations.problems == []
    assert decisions[-1].actions[-1].kind == "DONE"
    assert [a.code for d in decisions[1:8] for a in d.actions] == [
        "pyautogui.hotkey('ctrl', 'home')",
        *["pyautogui.press('down')"] * 5,
        "pyautogui.press('right')",
    ]
    first, second = server.completions()[:2]
    assert first.body["tools"] == [
        {"type": "computer_use_preview", "display_width": 1920, "display_height": 1080, "environment": "linux"}
    ]
    assert first.body["truncation"] == "auto" and "the task is infeasible" in first.body["instructions"]
    if chaining == "items":
        kinds = [i.get("type") or i.get("role") for i in second.body["input"]]
        assert kinds == ["user", "reasoning", "computer_call", "computer_call_output"]  # reasoning items kept
        assert "previous_response_id" not in second.body
    else:
        assert second.body["previous_response_id"] == "resp_1"
        assert [i["type"] for i in second.body["input"]] == ["computer_call_output"]
        assert second.body["input"][0]["output"]["type"] == "computer_screenshot"


def test_a_wait_is_one_second_and_the_infeasible_phrase_is_fail(server: ModelServer) -> None:
    serve(server)
    refresh = task("os-refresh-rate", EVERY)
    (decision,) = play(runner("openai-computer", server, refresh), refresh["instruction"])
    assert [a.kind for a in decision.actions] == ["FAIL"]
    calc = task("calc-sum-units", EVERY)
    first = runner("openai-computer", server, calc).predict(observe(calc["instruction"], 0))
    assert [(a.kind, a.code, a.seconds) for a in first.actions] == [("WAIT", None, 1.0)]
    assert first.actions[0].raw["call"] == {"type": "wait"}


def test_pending_safety_checks_end_the_episode_unless_acknowledging_is_allowed(server: ModelServer) -> None:
    serve(server)
    safety = task("case-safety", EVERY)
    (stopped,) = play(runner("openai-computer", server, safety), safety["instruction"])
    assert stopped.actions == [] and stopped.stop is not None
    assert "malicious_instructions" in stopped.stop and "--osworld-acknowledge-safety-checks" in stopped.stop

    other = ModelServer(models=["computer-use-preview"])
    with other:
        script = serve(other)
        agent = runner("openai-computer", other, safety, acknowledge_safety_checks=True)
        clicked, ended = play(agent, safety["instruction"])
        assert [a.kind for a in clicked.actions] == ["code"] and [a.kind for a in ended.actions] == ["FAIL"]
        assert script.conversations.problems == []
        assert script.conversations.started["case-safety"].notes["acknowledged"] == [SAFETY_CHECK]


def test_a_refusal_ends_the_turn_for_good_and_a_cut_answer_is_dropped(server: ModelServer) -> None:
    script = serve(server)
    refusal = task("case-refusal", EVERY)
    (refused,) = play(runner("openai-computer", server, refusal), refusal["instruction"])
    assert (
        refused.stop is not None and "refused" in refused.stop and "refusal: I can't help" in (refused.response or "")
    )
    cut = task("case-cut", EVERY)
    dropped, failed = play(runner("openai-computer", server, cut), cut["instruction"])
    assert dropped.parse_error is not None and "max_output_tokens" in dropped.parse_error
    assert [a.kind for a in failed.actions] == ["FAIL"] and script.conversations.problems == []


@pytest.mark.parametrize(
    ("case", "problem"), [("nonsense", r"x, y must be \[x, y\]"), ("unknown", "unknown action 'teleport'")]
)
def test_a_bad_computer_call_is_recorded_and_answered(server: ModelServer, case: str, problem: str) -> None:
    script = serve(server)
    bad = task(f"case-{case}", EVERY)
    first, second = play(runner("openai-computer", server, bad), bad["instruction"])
    assert first.parse_error is not None and re.search(problem, first.parse_error)
    assert [a.kind for a in second.actions] == ["FAIL"] and script.conversations.problems == []
    told = server.completions()[1].body["input"]
    assert told[0]["type"] == "computer_call_output" and "could not be carried out" in told[1]["content"][0]["text"]


def test_computer_call_actions_map_onto_the_guest() -> None:
    assert parse_cua_action({"type": "click", "button": "wheel", "x": 5, "y": 6}, SCREEN).button == "middle"
    assert parse_cua_action({"type": "double_click", "x": 5, "y": 6}, SCREEN).clicks == 2
    drag = parse_cua_action({"type": "drag", "path": [{"x": 1, "y": 2}, {"x": 3, "y": 4}, {"x": 5, "y": 6}]}, SCREEN)
    assert drag.path == ((1, 2), (3, 4), (5, 6))
    scroll = parse_cua_action({"type": "scroll", "x": 10, "y": 20, "scroll_x": 0, "scroll_y": 3}, SCREEN)
    assert scroll.scroll == (0, 3) and scroll.point == (10, 20)  # wheel clicks, positive scrolls down
    assert parse_cua_action({"type": "keypress", "keys": ["CTRL", "SHIFT", "ARROWLEFT"]}, SCREEN).chords == (
        ("ctrl", "shift", "left"),
    )
    assert parse_cua_action({"type": "move", "x": 1, "y": 1}, SCREEN).kind == "move"
    assert parse_cua_action({"type": "screenshot"}, SCREEN).informs
    for bad in (
        {"type": "click", "button": "back", "x": 1, "y": 1},
        {"type": "drag", "path": [{"x": 1, "y": 1}]},
        {"type": "scroll", "x": 1, "y": 1, "scroll_y": 500},
        {"type": "keypress", "keys": "ctrl"},
    ):
        with pytest.raises(ActionError):
            parse_cua_action(bad, SCREEN)


def test_a_failed_response_is_the_endpoints_failure(server: ModelServer) -> None:
    server.script(
        "computer-use-preview",
        Json({"id": "resp_x", "status": "failed", "error": {"code": "server_error"}, "output": []}),
    )
    calc = task("calc-sum-units", EVERY)
    with pytest.raises(ModelError, match="server_error"):
        runner("openai-computer", server, calc).predict(observe(calc["instruction"], 0))


def test_the_screenshot_scales_to_the_max_width_and_the_tool_declares_it(server: ModelServer) -> None:
    script = serve(server, display=(1280, 720), environment="ubuntu")
    poem = task("multi-poem-to-writer", EVERY)
    decisions = play(
        runner("openai-computer", server, poem, screenshot_max_width=1280, openai_environment="ubuntu"),
        poem["instruction"],
    )
    assert script.conversations.problems == []
    click = next(a for d in decisions for a in d.actions if a.code and "click" in a.code)
    assert click.raw["call"] == {"type": "click", "button": "left", "x": 640, "y": 400}  # on the 1280x720 screenshot
    assert click.code == "pyautogui.click(960, 600, clicks=1, button='left')"  # the solution's point on the screen
