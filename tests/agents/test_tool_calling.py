"""The tool-calling runner against a local OpenAI-compatible chat server calling one computer function (no Docker)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from pytest_osworld.agents.native.tool_calling import function_schema
from tests.agents.native_helpers import observe, play, runner, task, tasks
from tests.support.model_server import Json, ModelServer
from tests.support.tool_calling_server import ToolCallingScript

CASES = ("nonsense", "unknown", "refusal", "cut", "look")
EVERY = tasks(*CASES)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(models=["vlm-test"]) as running:
        yield running


def serve(server: ModelServer, **kwargs: object) -> ToolCallingScript:
    script = ToolCallingScript(EVERY, **kwargs)  # type: ignore[arg-type]
    server.respond_with("vlm-test", script)
    return script


def answer(*calls: dict[str, object], content: str | None = None, finish: str = "tool_calls") -> Json:
    tool_calls = [
        {"id": f"call_{n}", "type": "function", "function": {"name": "computer", "arguments": json.dumps(c)}}
        for n, c in enumerate(calls)
    ]
    message: dict[str, object] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Json({"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": {}})


def test_parallel_tool_calls_run_in_order_and_terminate_ends(server: ModelServer) -> None:
    script = serve(server)
    calc = task("calc-sum-units", EVERY)
    decisions = play(runner("tool-calling", server, calc), calc["instruction"])
    assert script.conversations.problems == []
    assert [len(d.actions) for d in decisions] == [1, 3, 1, 1, 1, 1]
    assert decisions[1].actions[0].code == "pyautogui.hotkey('ctrl', 'home')"
    assert [a.kind for a in decisions[-1].actions] == ["DONE"]  # terminate with status success
    first = server.completions()[0].body
    assert first["tools"] == [function_schema(False)] and first["tool_choice"] == "auto"
    second = server.completions()[2].body["messages"]
    assert [m["role"] for m in second[-5:]] == ["assistant", "tool", "tool", "tool", "user"]


def test_terminate_failure_is_fail_and_a_call_before_it_still_runs(server: ModelServer) -> None:
    server.script("vlm-test", answer({"action": "key", "text": "Escape"}, {"action": "terminate", "status": "failure"}))
    refresh = task("os-refresh-rate", EVERY)
    decision = runner("tool-calling", server, refresh).predict(observe(refresh["instruction"], 0))
    assert [(a.kind, a.code) for a in decision.actions] == [("code", "pyautogui.press('esc')"), ("FAIL", None)]


def test_a_plain_answer_is_done_or_fail_by_its_words(server: ModelServer) -> None:
    server.script("vlm-test", answer(content="Finished."), answer(content="I'm sorry, the task is infeasible."))
    calc = task("calc-sum-units", EVERY)
    assert [a.kind for a in runner("tool-calling", server, calc).predict(observe(calc["instruction"], 0)).actions] == [
        "DONE"
    ]
    assert [a.kind for a in runner("tool-calling", server, calc).predict(observe(calc["instruction"], 0)).actions] == [
        "FAIL"
    ]


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("nonsense", "the arguments are not valid JSON"),
        ("unknown", "unknown action 'teleport'"),
        ("refusal", "the model refused to answer"),
        ("cut", "cut off at the token limit (stop reason length)"),
    ],
)
def test_an_unusable_answer_spends_the_step_and_the_episode_goes_on(
    server: ModelServer, case: str, problem: str
) -> None:
    script = serve(server)
    bad = task(f"case-{case}", EVERY)
    first, second = play(runner("tool-calling", server, bad), bad["instruction"])
    assert first.parse_error is not None and problem in first.parse_error
    assert [a.kind for a in second.actions] == ["FAIL"] and script.conversations.problems == []


def test_screenshot_cursor_and_zoom_come_back_as_tool_answers_and_images(server: ModelServer) -> None:
    script = serve(server)
    look = task("case-look", EVERY)
    play(runner("tool-calling", server, look), look["instruction"], pointer=lambda: (100, 200))
    assert script.conversations.problems == []
    assert script.conversations.started["case-look"].notes["answers"] == [
        "The screen now.",
        "X=100,Y=200",
        "The region [0, 0, 480, 270] of the screen, closer.",
    ]
    last = server.completions()[1].body["messages"][-1]["content"]
    assert sum(1 for p in last if p["type"] == "image_url") == 3  # screenshot, zoom, the screen now


def test_relative_coordinates_and_a_smaller_screenshot(server: ModelServer) -> None:
    script = serve(server, relative=True, image=(1280, 720))
    poem = task("multi-poem-to-writer", EVERY)
    decisions = play(
        runner("tool-calling", server, poem, relative_coordinates=True, screenshot_max_width=1280), poem["instruction"]
    )
    assert script.conversations.problems == []
    click = next(a for d in decisions for a in d.actions if a.code and "click" in a.code)
    assert (
        click.raw["call"]["coordinate"] == [500, 556]
        and click.code == "pyautogui.click(960, 600, clicks=1, button='left')"
    )
    assert "relative: x and y from 0 to 1000" in server.completions()[0].body["messages"][0]["content"]


def test_call_user_is_offered_only_for_a_task_with_a_user(server: ModelServer) -> None:
    assert "call_user" not in function_schema(False)["function"]["parameters"]["properties"]["action"]["enum"]
    server.script("vlm-test", answer({"action": "call_user", "text": "Which file?"}))
    calc = task("calc-sum-units", EVERY)
    decision = runner("tool-calling", server, calc, asks_user=True).predict(observe(calc["instruction"], 0))
    assert [(a.kind, a.question) for a in decision.actions] == [("CALL_USER", "Which file?")]
    assert (
        "call_user"
        in server.completions()[0].body["tools"][0]["function"]["parameters"]["properties"]["action"]["enum"]
    )
    server.script("vlm-test", answer({"action": "call_user", "text": "Which file?"}))
    refused = runner("tool-calling", server, calc).predict(observe(calc["instruction"], 0))
    assert refused.parse_error is not None and "unknown action 'call_user'" in refused.parse_error


def test_only_the_last_images_stay(server: ModelServer) -> None:
    serve(server, keep_images=2)
    calc = task("calc-sum-units", EVERY)
    play(runner("tool-calling", server, calc, history_images=2), calc["instruction"])
    text = json.dumps(server.completions()[-1].body["messages"])
    assert text.count('"image_url": {') == 2 and "an earlier screenshot, removed" in text
