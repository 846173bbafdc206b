"""The actions of Anthropic's ``computer`` tool, read from a tool call's input.

The ``anthropic-computer`` runner reads Anthropic's tool_use inputs with it, and the ``tool-calling``
runner gives its ``computer`` function the same actions and parameters (a model trained on one knows
the other). Parameters that are absent or null are not given; a wrong one refuses the action with
its name (:class:`ActionError`).

| action | parameters |
|---|---|
| ``key`` | ``text``: xdotool keys, ``ctrl+s``, ``Return``, ``ctrl+a Delete`` |
| ``type`` | ``text`` |
| ``mouse_move`` | ``coordinate`` |
| ``left_click``, ``right_click``, ``middle_click``, ``double_click``, ``triple_click`` | ``coordinate`` (else where the pointer is), ``text``/``key``: modifier keys held |
| ``left_click_drag`` | ``start_coordinate`` (else where the pointer is), ``coordinate`` |
| ``left_mouse_down``, ``left_mouse_up`` | ``coordinate`` (else where the pointer is) |
| ``scroll`` | ``scroll_direction`` (up, down, left, right), ``scroll_amount`` (wheel clicks), ``coordinate``, ``text``: modifiers |
| ``hold_key`` | ``text``, ``duration`` (seconds) |
| ``wait`` | ``duration`` (seconds) |
| ``screenshot``, ``cursor_position`` | none |
| ``zoom`` | ``region``: [x0, y0, x1, y1] (only where the tool enables it) |
"""

from __future__ import annotations

from typing import Any

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.actions import ActionError, Button, GuiCall, check_point, check_seconds
from pytest_osworld.agents.native.keys import xdotool_sequence

CLICKS: dict[str, tuple[Button, int]] = {
    "left_click": ("left", 1),
    "right_click": ("right", 1),
    "middle_click": ("middle", 1),
    "double_click": ("left", 2),
    "triple_click": ("left", 3),
}
ACTIONS_20250124 = (
    "key",
    "type",
    "mouse_move",
    *CLICKS,
    "left_click_drag",
    "left_mouse_down",
    "left_mouse_up",
    "scroll",
    "hold_key",
    "wait",
    "screenshot",
    "cursor_position",
)
SCROLL = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
MAX_SCROLL = 100


def parse_computer_input(data: Any, frame: Frame, *, zoom: bool) -> GuiCall:
    """The :class:`GuiCall` of one ``computer`` tool input (a dict with ``action``); ``zoom``: the tool
    was declared with the zoom action."""
    if not isinstance(data, dict):
        raise ActionError(f"the tool input must be an object with an 'action', got {type(data).__name__}")
    given = {k: v for k, v in data.items() if v is not None}
    action = given.get("action")
    known = (*ACTIONS_20250124, *(("zoom",) if zoom else ()))
    if not isinstance(action, str) or action not in known:
        raise ActionError(f"unknown action {action!r}; the actions are: {', '.join(known)}")
    if action == "key":
        return GuiCall("key", chords=tuple(xdotool_sequence(_text(given, action))))
    if action == "type":
        return GuiCall("type", text=_text(given, action, allow_empty=True))
    if action == "mouse_move":
        return GuiCall("move", point=check_point(_required(given, "coordinate", action), frame, "coordinate"))
    if action in CLICKS:
        button, clicks = CLICKS[action]
        return GuiCall(
            "click",
            point=_optional_point(given, frame),
            button=button,
            clicks=clicks,
            modifiers=_modifiers(given),
        )
    if action == "left_click_drag":
        end = check_point(_required(given, "coordinate", action), frame, "coordinate")
        start = given.get("start_coordinate")
        if start is None:
            return GuiCall("drag", path=(end,), modifiers=_modifiers(given))  # from where the pointer is
        return GuiCall("drag", path=(check_point(start, frame, "start_coordinate"), end), modifiers=_modifiers(given))
    if action in ("left_mouse_down", "left_mouse_up"):
        kind = "mouse_down" if action == "left_mouse_down" else "mouse_up"
        return GuiCall(kind, point=_optional_point(given, frame))  # type: ignore[arg-type]
    if action == "scroll":
        return _scroll(given, frame)
    if action == "hold_key":
        chords = xdotool_sequence(_text(given, action))
        if len(chords) != 1:
            raise ActionError("hold_key holds one key chord (e.g. shift or ctrl+alt), not a sequence")
        return GuiCall("hold_key", chords=(chords[0],), seconds=check_seconds(_required(given, "duration", action)))
    if action == "wait":
        return GuiCall("wait", seconds=check_seconds(_required(given, "duration", action)))
    if action == "zoom":
        return GuiCall("zoom", region=_region(_required(given, "region", action), frame))
    return GuiCall(action)  # type: ignore[arg-type]  # screenshot, cursor_position


def _required(given: dict[str, Any], name: str, action: str) -> Any:
    if name not in given:
        raise ActionError(f"{action} needs {name}")
    return given[name]


def _text(given: dict[str, Any], action: str, *, allow_empty: bool = False) -> str:
    text = _required(given, "text", action)
    if not isinstance(text, str) or (not allow_empty and not text.strip()):
        raise ActionError(f"{action} needs text as a non-empty string, got {text!r}")
    return text


def _optional_point(given: dict[str, Any], frame: Frame) -> tuple[float, float] | None:
    value = given.get("coordinate")
    return None if value is None else check_point(value, frame, "coordinate")


def _modifiers(given: dict[str, Any]) -> tuple[str, ...]:
    value = given.get("text", given.get("key"))
    if value is None or value == "":
        return ()
    if not isinstance(value, str):
        raise ActionError(f"modifier keys must be a string such as 'shift' or 'ctrl+shift', got {value!r}")
    chords = xdotool_sequence(value)
    if len(chords) != 1:
        raise ActionError(f"modifier keys are one chord (e.g. ctrl+shift), got {value!r}")
    return chords[0]


def _scroll(given: dict[str, Any], frame: Frame) -> GuiCall:
    direction = _required(given, "scroll_direction", "scroll")
    if direction not in SCROLL:
        raise ActionError(f"scroll_direction must be up, down, left or right, got {direction!r}")
    amount = _required(given, "scroll_amount", "scroll")
    if not isinstance(amount, int) or isinstance(amount, bool) or not 0 <= amount <= MAX_SCROLL:
        raise ActionError(
            f"scroll_amount must be a whole number of wheel clicks from 0 to {MAX_SCROLL}, got {amount!r}"
        )
    dx, dy = SCROLL[direction]
    return GuiCall(
        "scroll", point=_optional_point(given, frame), scroll=(dx * amount, dy * amount), modifiers=_modifiers(given)
    )


def _region(value: Any, frame: Frame) -> tuple[float, float, float, float]:
    if not isinstance(value, list | tuple) or len(value) != 4:
        raise ActionError(f"region must be [x0, y0, x1, y1], got {value!r}")
    x0, y0 = check_point(value[:2], frame, "region")
    x1, y1 = check_point(value[2:], frame, "region")
    if x1 <= x0 or y1 <= y0:
        raise ActionError(f"region {list(value)} is empty: x1 and y1 must be larger than x0 and y0")
    return x0, y0, x1, y1
