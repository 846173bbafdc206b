"""The native protocols' actions as the guest runs them: key names, and the pyautogui code of each action."""

from __future__ import annotations

import ast

import pytest

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.actions import ActionError, GuiCall, check_point, to_code, type_lines
from pytest_osworld.agents.native.computer_tool import parse_computer_input
from pytest_osworld.agents.native.keys import cua_chord, key_name, spaced_chord, xdotool_sequence
from pytest_osworld.agents.parsing import ParseError

SCREEN = Frame(screen=(1920, 1080), image=(1920, 1080))
HALF = Frame(screen=(1920, 1080), image=(960, 540))


@pytest.mark.parametrize(
    ("xdotool", "chords"),
    [
        ("Return", [("enter",)]),
        ("ctrl+s", [("ctrl", "s")]),
        ("ctrl+shift+T", [("ctrl", "shift", "T")]),  # a capital keeps xdotool's meaning: shift+t
        ("ctrl+a Delete", [("ctrl", "a"), ("delete",)]),
        ("Page_Down KP_Enter super", [("pagedown",), ("enter",), ("win",)]),
        ("alt+F4", [("alt", "f4")]),
        ("ctrl+plus ctrl++ +", [("ctrl", "+"), ("ctrl", "+"), ("+",)]),
        (
            "Home End Prior Next BackSpace Escape Tab",
            [("home",), ("end",), ("pageup",), ("pagedown",), ("backspace",), ("esc",), ("tab",)],
        ),
        ("KP_5 minus bracketleft", [("num5",), ("-",), ("[",)]),
    ],
)
def test_xdotool_key_names_become_pyautogui_names(xdotool: str, chords: list[tuple[str, ...]]) -> None:
    assert xdotool_sequence(xdotool) == chords


def test_openai_and_uitars_key_names() -> None:
    assert cua_chord(["CTRL", "A"]) == ("ctrl", "a")
    assert cua_chord(["ARROWUP"]) == ("up",) and cua_chord(["ENTER"]) == ("enter",) and cua_chord(["ESC"]) == ("esc",)
    assert cua_chord(["CMD", "SHIFT", "Z"]) == ("win", "shift", "z")
    assert spaced_chord("ctrl c") == ("ctrl", "c") and spaced_chord("ctrl+alt+t") == ("ctrl", "alt", "t")
    assert spaced_chord("Enter") == ("enter",)


@pytest.mark.parametrize("bad", ["Hyper_Q", "ctrl+", "frobnicate"])
def test_an_unknown_key_is_refused_by_name(bad: str) -> None:
    with pytest.raises(ParseError, match=r"key"):
        xdotool_sequence(bad)
    with pytest.raises(ParseError):
        key_name("NoSuchKey")


def _calls(code: str | None) -> list[str]:
    assert code is not None
    return [ast.unparse(node) for node in ast.parse(code).body]


def test_clicks_map_each_point_to_the_screen_with_modifiers_held() -> None:
    call = parse_computer_input(
        {"action": "double_click", "coordinate": [100, 50], "text": "ctrl+shift"}, HALF, zoom=False
    )
    assert _calls(to_code(call, HALF)) == [
        "pyautogui.keyDown('ctrl')",
        "pyautogui.keyDown('shift')",
        "pyautogui.click(200, 100, clicks=2, button='left')",
        "pyautogui.keyUp('shift')",
        "pyautogui.keyUp('ctrl')",
    ]
    where_it_is = parse_computer_input({"action": "right_click"}, HALF, zoom=False)
    assert _calls(to_code(where_it_is, HALF)) == ["pyautogui.click(clicks=1, button='right')"]
    triple = parse_computer_input({"action": "triple_click", "coordinate": [959, 539]}, HALF, zoom=False)
    assert _calls(to_code(triple, HALF)) == ["pyautogui.click(1918, 1078, clicks=3, button='left')"]


def test_drags_scrolls_mouse_buttons_holds_and_waits() -> None:
    drag = parse_computer_input(
        {"action": "left_click_drag", "start_coordinate": [10, 20], "coordinate": [30, 40]}, HALF, zoom=False
    )
    assert _calls(to_code(drag, HALF)) == [
        "pyautogui.moveTo(20, 40)",
        "pyautogui.mouseDown(button='left')",
        "pyautogui.moveTo(60, 80, duration=0.2)",
        "pyautogui.mouseUp(button='left')",
    ]
    from_pointer = parse_computer_input({"action": "left_click_drag", "coordinate": [30, 40]}, HALF, zoom=False)
    assert _calls(to_code(from_pointer, HALF))[0] == "pyautogui.mouseDown(button='left')"
    scroll = parse_computer_input(
        {"action": "scroll", "coordinate": [5, 5], "scroll_direction": "down", "scroll_amount": 3, "text": "shift"},
        HALF,
        zoom=False,
    )
    assert _calls(to_code(scroll, HALF)) == [
        "pyautogui.moveTo(10, 10)",
        "pyautogui.keyDown('shift')",
        "pyautogui.scroll(-3)",
        "pyautogui.keyUp('shift')",
    ]
    left = parse_computer_input({"action": "scroll", "scroll_direction": "left", "scroll_amount": 2}, HALF, zoom=False)
    assert _calls(to_code(left, HALF)) == ["pyautogui.hscroll(-2)"]
    down = parse_computer_input({"action": "left_mouse_down", "coordinate": [1, 1]}, HALF, zoom=False)
    assert _calls(to_code(down, HALF)) == ["pyautogui.mouseDown(2, 2, button='left')"]
    hold = parse_computer_input({"action": "hold_key", "text": "shift", "duration": 1.5}, HALF, zoom=False)
    assert _calls(to_code(hold, HALF)) == ["pyautogui.keyDown('shift')", "time.sleep(1.5)", "pyautogui.keyUp('shift')"]
    wait = parse_computer_input({"action": "wait", "duration": 2}, HALF, zoom=False)
    assert wait.seconds == 2.0 and to_code(wait, HALF) is None  # the harness sleeps it: no guest program
    assert to_code(GuiCall("wait"), HALF) is None  # no duration: the harness's WAIT
    assert to_code(parse_computer_input({"action": "screenshot"}, HALF, zoom=False), HALF) is None


def test_typing_presses_less_than_as_shift_comma_and_leaves_the_rest_to_xdotool() -> None:
    assert [ast.unparse(ast.parse(line).body[0]) for line in type_lines("a<b\nč!")] == [
        "pyautogui.write('a')",
        "pyautogui.hotkey('shift', ',')",
        "pyautogui.write('b\\n')",
        "__import__('subprocess').run(['xdotool', 'type', '--', 'č'], check=True)",
        "pyautogui.write('!')",
    ]
    typed = parse_computer_input({"action": "type", "text": "x = 'y'"}, SCREEN, zoom=False)
    assert _calls(to_code(typed, SCREEN)) == ["pyautogui.write(\"x = 'y'\")"]


@pytest.mark.parametrize(
    ("tool_input", "problem"),
    [
        ({"action": "left_click", "coordinate": [961, 10]}, "outside the screen"),
        ({"action": "left_click", "coordinate": [-1, 10]}, "outside the screen"),
        ({"action": "left_click", "coordinate": "here"}, r"coordinate must be \[x, y\]"),
        ({"action": "mouse_move"}, "mouse_move needs coordinate"),
        ({"action": "key"}, "key needs text"),
        ({"action": "key", "text": "  "}, "non-empty string"),
        ({"action": "scroll", "scroll_direction": "sideways", "scroll_amount": 1}, "scroll_direction must be"),
        ({"action": "scroll", "scroll_direction": "up", "scroll_amount": 1.5}, "scroll_amount must be"),
        ({"action": "wait", "duration": 500}, "duration must be"),
        ({"action": "hold_key", "text": "a b", "duration": 1}, "one key chord"),
        ({"action": "zoom", "region": [0, 0, 10, 10]}, "unknown action 'zoom'"),
        ({"action": "teleport"}, "unknown action 'teleport'"),
        (["left_click"], "must be an object"),
    ],
)
def test_a_bad_tool_input_is_refused_saying_why(tool_input: object, problem: str) -> None:
    with pytest.raises(ActionError, match=problem):
        parse_computer_input(tool_input, HALF, zoom=False)


def test_zoom_needs_the_tool_that_declares_it_and_a_real_region() -> None:
    call = parse_computer_input({"action": "zoom", "region": [0, 0, 480, 270]}, HALF, zoom=True)
    assert call.informs and call.region == (0, 0, 480, 270)
    with pytest.raises(ActionError, match="empty"):
        parse_computer_input({"action": "zoom", "region": [10, 10, 10, 20]}, HALF, zoom=True)


def test_points_are_checked_against_the_models_frame() -> None:
    relative = Frame(screen=(1920, 1080), image=(1920, 1080), relative=True)
    assert check_point([1000, 1000], relative, "p") == (1000.0, 1000.0)
    with pytest.raises(ActionError):
        check_point([1001, 5], relative, "p")
    with pytest.raises(ActionError):
        check_point([True, 5], relative, "p")
