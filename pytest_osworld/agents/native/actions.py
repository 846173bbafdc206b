"""The neutral form of a native protocol's action, and the pyautogui code the guest runs for it.

Each protocol's parser turns the model's tool call into a :class:`GuiCall` in the model's coordinate
frame; :func:`to_code` maps its points to screen pixels (``Frame.to_screen``, the same rule for every
runner) and writes the pyautogui program the guest's ``/execute`` runs, as an OSWorld action is run.
Three kinds change nothing on the screen and run nothing: ``screenshot``, ``cursor_position`` and
``zoom`` are answered to the model by the runner (:mod:`pytest_osworld.agents.native.loop`).

Typing goes through ``pyautogui.write`` piece by piece with every ``<`` pressed as shift+comma (what
OSWorld's ``<`` rewrite does for its pyautogui actions, so a VM whose keyboard map types ``>`` for ``<``
gets the right character), and characters pyautogui cannot type (outside ASCII) through ``xdotool type``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Any, Literal

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.keys import Chord
from pytest_osworld.agents.parsing import ParseError

Point = tuple[float, float]
Button = Literal["left", "right", "middle"]
Kind = Literal[
    "click",
    "move",
    "drag",
    "mouse_down",
    "mouse_up",
    "scroll",
    "key",
    "type",
    "hold_key",
    "wait",
    "screenshot",
    "cursor_position",
    "zoom",
]
INFORMING: frozenset[str] = frozenset({"screenshot", "cursor_position", "zoom"})
DRAG_SEGMENT_S = 0.2  # each leg of a drag moves over this long: applications see the pointer travel
MAX_SECONDS = 100.0  # the longest wait or key hold one action may ask for
_TYPABLE = frozenset(string.printable) - frozenset("\x0b\x0c")


class ActionError(ParseError):
    """A tool call that cannot be carried out (unknown action, a missing or bad parameter): the
    step records it and the model is told why."""


@dataclass(frozen=True)
class GuiCall:
    """One action of a native protocol, in the model's frame."""

    kind: Kind
    point: Point | None = None  # where: a click, move, mouse button or scroll; None: where the pointer is
    path: tuple[
        Point, ...
    ] = ()  # a drag's points, pressed at the first (one: where the pointer is), released at the last
    button: Button = "left"
    clicks: int = 1
    chords: tuple[Chord, ...] = ()  # key: pressed one after the other; hold_key: the first, held
    modifiers: Chord = ()  # held during a click or scroll
    text: str = ""
    scroll: tuple[int, int] = (0, 0)  # wheel clicks (right, down); negative: left, up
    seconds: float | None = None  # wait or hold; a wait without: the harness's WAIT
    region: tuple[float, float, float, float] | None = None  # zoom: x0, y0, x1, y1

    @property
    def informs(self) -> bool:
        """Answered to the model without running anything (the screen does not change)."""
        return self.kind in INFORMING

    def model_points(self) -> list[Point]:
        points = [self.point] if self.point is not None else []
        points += list(self.path)
        if self.region is not None:
            points += [self.region[:2], self.region[2:]]
        return points


def screen_points(call: GuiCall, frame: Frame) -> list[list[int]]:
    """The call's points in screen pixels, for the record (beside the model's own)."""
    return [list(frame.to_screen(*p)) for p in call.model_points()]


def check_point(value: Any, frame: Frame, name: str) -> Point:
    """A point ``[x, y]`` of the model's frame; raises :class:`ActionError` naming the parameter."""
    if (
        not isinstance(value, list | tuple)
        or len(value) != 2
        or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    ):
        raise ActionError(f"{name} must be [x, y] (two numbers), got {value!r}")
    x, y = float(value[0]), float(value[1])
    width, height = frame.model_size
    if not (0 <= x <= width and 0 <= y <= height):
        raise ActionError(f"{name} {[value[0], value[1]]} is outside the screen (0..{width} x 0..{height})")
    return x, y


def check_seconds(value: Any, name: str = "duration") -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 <= value <= MAX_SECONDS:
        raise ActionError(f"{name} must be a number of seconds from 0 to {MAX_SECONDS:g}, got {value!r}")
    return float(value)


def to_code(call: GuiCall, frame: Frame) -> str | None:
    """The pyautogui program for ``call`` (``pyautogui`` and ``time`` are imported by the guest's
    prefix), or None for a wait (the harness's WAIT, timed or not) and the informing kinds."""
    if call.informs or call.kind == "wait":
        return None
    lines = _LINES[call.kind](call, frame)
    return "\n".join(lines)


def _xy(point: Point, frame: Frame) -> str:
    x, y = frame.to_screen(*point)
    return f"{x}, {y}"


def _held(call: GuiCall, lines: list[str]) -> list[str]:
    down = [f"pyautogui.keyDown({k!r})" for k in call.modifiers]
    up = [f"pyautogui.keyUp({k!r})" for k in reversed(call.modifiers)]
    return down + lines + up


def _click(call: GuiCall, frame: Frame) -> list[str]:
    where = f"{_xy(call.point, frame)}, " if call.point is not None else ""
    return _held(call, [f"pyautogui.click({where}clicks={call.clicks}, button={call.button!r})"])


def _move(call: GuiCall, frame: Frame) -> list[str]:
    assert call.point is not None
    return [f"pyautogui.moveTo({_xy(call.point, frame)})"]


def _drag(call: GuiCall, frame: Frame) -> list[str]:
    # One point: from where the pointer is to there; more: pressed at the first.
    first, rest = (None, list(call.path)) if len(call.path) == 1 else (call.path[0], list(call.path[1:]))
    lines = [f"pyautogui.moveTo({_xy(first, frame)})"] if first is not None else []
    lines.append(f"pyautogui.mouseDown(button={call.button!r})")
    lines += [f"pyautogui.moveTo({_xy(p, frame)}, duration={DRAG_SEGMENT_S})" for p in rest]
    lines.append(f"pyautogui.mouseUp(button={call.button!r})")
    return _held(call, lines)


def _mouse_button(call: GuiCall, frame: Frame) -> list[str]:
    function = "mouseDown" if call.kind == "mouse_down" else "mouseUp"
    where = f"{_xy(call.point, frame)}, " if call.point is not None else ""
    return [f"pyautogui.{function}({where}button={call.button!r})"]


def _scroll(call: GuiCall, frame: Frame) -> list[str]:
    lines = [f"pyautogui.moveTo({_xy(call.point, frame)})"] if call.point is not None else []
    right, down = call.scroll
    body = []
    if down:
        body.append(f"pyautogui.scroll({-down})")  # pyautogui: positive scrolls up
    if right:
        body.append(f"pyautogui.hscroll({right})")  # positive scrolls right
    return lines + _held(call, body)


def _key(call: GuiCall, frame: Frame) -> list[str]:
    lines = []
    for chord in call.chords:
        if len(chord) == 1:
            lines.append(f"pyautogui.press({chord[0]!r})")
        else:
            lines.append(f"pyautogui.hotkey({', '.join(repr(k) for k in chord)})")
    return lines


def _type(call: GuiCall, frame: Frame) -> list[str]:
    return type_lines(call.text)


def type_lines(text: str) -> list[str]:
    """Typing ``text``: ASCII through ``pyautogui.write``, ``<`` as shift+comma, the rest through xdotool."""
    lines: list[str] = []
    piece = ""
    foreign = ""

    def flush() -> None:
        nonlocal piece, foreign
        if piece:
            lines.append(f"pyautogui.write({piece!r})")
            piece = ""
        if foreign:
            lines.append(f"__import__('subprocess').run(['xdotool', 'type', '--', {foreign!r}], check=True)")
            foreign = ""

    for char in text:
        if char == "<":
            flush()
            lines.append("pyautogui.hotkey('shift', ',')")
        elif char in _TYPABLE:
            if foreign:
                flush()
            piece += char
        else:
            if piece:
                flush()
            foreign += char
    flush()
    return lines


def _hold_key(call: GuiCall, frame: Frame) -> list[str]:
    keys = call.chords[0]
    return [
        *(f"pyautogui.keyDown({k!r})" for k in keys),
        f"time.sleep({call.seconds})",
        *(f"pyautogui.keyUp({k!r})" for k in reversed(keys)),
    ]


_LINES = {
    "click": _click,
    "move": _move,
    "drag": _drag,
    "mouse_down": _mouse_button,
    "mouse_up": _mouse_button,
    "scroll": _scroll,
    "key": _key,
    "type": _type,
    "hold_key": _hold_key,
}
