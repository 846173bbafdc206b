"""The uitars runner: UI-TARS's grammar, its coordinate frames and image sizes, against a local chat server (no Docker)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.actions import ActionError
from pytest_osworld.agents.native.uitars_grammar import content_of, parse_call, split_answer
from tests.agents.native_helpers import observe, play, runner, task, tasks
from tests.support.model_server import Json, ModelServer
from tests.support.uitars_server import UITarsScript, qwen_size

CASES = ("nonsense", "unknown", "refusal", "cut")
EVERY = tasks(*CASES)
ABSOLUTE = Frame(screen=(1920, 1080), image=(1932, 1092))
RELATIVE = Frame(screen=(1920, 1080), image=(1932, 1092), relative=True)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with ModelServer(models=["ui-tars"]) as running:
        yield running


def serve(server: ModelServer, **kwargs: object) -> UITarsScript:
    script = UITarsScript(EVERY, **kwargs)  # type: ignore[arg-type]
    server.respond_with("ui-tars", script)
    return script


def text(content: str) -> Json:
    return Json(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}
    )


def test_the_answer_splits_into_thought_and_calls() -> None:
    thought, calls = split_answer("Thought: Open the menu.\nAction: click(start_box='(10,20)')\n\nhotkey(key='ctrl s')")
    assert thought == "Open the menu." and calls == ["click(start_box='(10,20)')", "hotkey(key='ctrl s')"]
    with pytest.raises(ActionError, match="no 'Action:'"):
        split_answer("I see a desktop.")


@pytest.mark.parametrize(
    ("source", "point"),
    [
        ("click(start_box='(966,546)')", (966, 546)),
        ("click(start_box='<|box_start|>(966,546)<|box_end|>')", (966, 546)),
        ("click(point='<point>966 546</point>')", (966, 546)),
        ("click(start_box='(960,540,972,552)')", (966, 546)),  # a box: its centre
        ("left_single(start_box='[966, 546]')", (966, 546)),
    ],
)
def test_every_way_of_writing_a_point(source: str, point: tuple[int, int]) -> None:
    step = parse_call(source, ABSOLUTE)
    assert step.call is not None and step.call.point == point and step.call.kind == "click"


def test_the_calls_and_their_meanings() -> None:
    assert parse_call("left_double(start_box='(1,1)')", ABSOLUTE).call.clicks == 2  # type: ignore[union-attr]
    assert parse_call("right_single(start_box='(1,1)')", ABSOLUTE).call.button == "right"  # type: ignore[union-attr]
    assert parse_call("hover(start_box='(1,1)')", ABSOLUTE).call.kind == "move"  # type: ignore[union-attr]
    drag = parse_call("drag(start_box='(1,2)', end_box='(3,4)')", ABSOLUTE).call
    assert drag is not None and drag.path == ((1, 2), (3, 4))
    assert parse_call("hotkey(key='ctrl alt t')", ABSOLUTE).call.chords == (("ctrl", "alt", "t"),)  # type: ignore[union-attr]
    assert parse_call("press(key='Enter')", ABSOLUTE).call.chords == (("enter",),)  # type: ignore[union-attr]
    scroll = parse_call("scroll(start_box='(5,5)', direction='down')", ABSOLUTE).call
    assert scroll is not None and scroll.scroll == (0, 5) and scroll.point == (5, 5)
    assert parse_call("type(content='it\\'s done\\n')", ABSOLUTE).call.text == "it's done\n"  # type: ignore[union-attr]
    # Quotes the model did not escape are still the text.
    assert parse_call("type(content='it's done')", ABSOLUTE).call.text == "it's done"  # type: ignore[union-attr]
    assert parse_call("wait()", ABSOLUTE).call.kind == "wait"  # type: ignore[union-attr]
    assert parse_call("finished(content='x')", ABSOLUTE).ending == "finished"
    assert content_of("finished(content='the task is infeasible')") == "the task is infeasible"
    for bad in ("teleport(start_box='(1,1)')", "click(start_box='(1)')", "click(5, 6)", "scroll(direction='sideways')"):
        with pytest.raises(ActionError):
            parse_call(bad, ABSOLUTE)
    with pytest.raises(ActionError, match="outside the screen"):
        parse_call("click(start_box='(1001,5)')", RELATIVE)


@pytest.mark.parametrize("coordinates", ["absolute", "relative"])
def test_a_task_plays_in_either_frame_on_the_smart_resized_screenshot(server: ModelServer, coordinates: str) -> None:
    script = serve(server, relative=coordinates == "relative")
    poem = task("multi-poem-to-writer", EVERY)
    decisions = play(runner("uitars", server, poem, uitars_coordinates=coordinates), poem["instruction"])
    assert script.conversations.problems == [] and decisions[-1].actions[-1].kind == "DONE"
    click = next(a for d in decisions for a in d.actions if a.code and "click" in a.code)
    assert click.code == "pyautogui.click(960, 600, clicks=1, button='left')"
    prompt = server.completions()[0].body["messages"][1]["content"][0]["text"]
    assert ("0 to 1000" in prompt) is (coordinates == "relative") and poem["instruction"] in prompt


def test_a_key_sequence_is_several_calls_and_finished_is_done(server: ModelServer) -> None:
    serve(server)
    calc = task("calc-sum-units", EVERY)
    decisions = play(runner("uitars", server, calc), calc["instruction"])
    assert len(decisions[1].actions) == 7 and decisions[0].actions[0].kind == "WAIT"  # wait(): the harness's WAIT
    assert [a.kind for a in decisions[-1].actions] == ["DONE"]


def test_call_user_is_fail_without_a_user_and_asks_with_one(server: ModelServer) -> None:
    serve(server)
    refresh = task("os-refresh-rate", EVERY)
    (failed,) = play(runner("uitars", server, refresh), refresh["instruction"])
    assert [a.kind for a in failed.actions] == ["FAIL"]
    server.script("ui-tars", text("Thought: Which monitor do you mean?\nAction: call_user()"))
    asked = runner("uitars", server, refresh, asks_user=True).predict(observe(refresh["instruction"], 0))
    assert [(a.kind, a.question) for a in asked.actions] == [("CALL_USER", "Which monitor do you mean?")]
    server.script("ui-tars", text("Thought: No.\nAction: finished(content='Sorry, the task is infeasible.')"))
    assert [a.kind for a in runner("uitars", server, refresh).predict(observe(refresh["instruction"], 0)).actions] == [
        "FAIL"
    ]


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("nonsense", "no 'Action:' line"),
        ("unknown", "unknown action 'teleport'"),
        ("refusal", "the model refused"),
        ("cut", "cut off at the token limit (stop reason length)"),
    ],
)
def test_an_unusable_answer_spends_the_step_and_the_episode_goes_on(
    server: ModelServer, case: str, problem: str
) -> None:
    script = serve(server)
    bad = task(f"case-{case}", EVERY)
    first, second = play(runner("uitars", server, bad), bad["instruction"])
    assert first.parse_error is not None and problem in first.parse_error
    assert [a.kind for a in second.actions] == ["FAIL"] and script.conversations.problems == []


def test_past_answers_keep_only_the_last_screenshots(server: ModelServer) -> None:
    script = serve(server, keep_images=2, image=qwen_size(1920, 1080, factor=32))
    calc = task("calc-sum-units", EVERY)
    play(runner("uitars", server, calc, history_images=2, uitars_factor=32), calc["instruction"])
    assert script.conversations.problems == []
    messages = server.completions()[-1].body["messages"]
    assert (
        sum(
            1
            for m in messages
            for p in (m["content"] if isinstance(m["content"], list) else [])
            if p["type"] == "image_url"
        )
        == 3
    )
    assert len([m for m in messages if m["role"] == "assistant"]) == 5  # every past answer stays
