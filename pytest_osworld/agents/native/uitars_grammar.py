"""UI-TARS / Qwen-VL answers: ``Thought: ... Action: click(start_box='(x1,y1)')``.

The action part (after the last ``Action:``) holds one or more calls separated by blank lines. Points
are written ``'(x,y)'``, ``'<|box_start|>(x,y)<|box_end|>'``, ``'<point>x y</point>'``, or as a box of
four numbers (its centre is the point), in the frame the runner's setting names (pixels of the resized
screenshot, or 0..1000). The calls:

| call | meaning |
|---|---|
| ``click`` / ``left_single``, ``left_double``, ``right_single``, ``hover`` | ``start_box`` or ``point`` |
| ``drag`` / ``select`` | ``start_box``/``start_point`` to ``end_box``/``end_point`` |
| ``hotkey(key='ctrl c')``, ``press(key='enter')`` | keys, lower case, separated by spaces |
| ``type(content='...')`` | typed; ``\\n`` presses enter |
| ``scroll(start_box, direction)`` | 5 wheel clicks that way (as OSWorld's UI-TARS agent) |
| ``wait()`` | the harness's WAIT |
| ``finished(content)`` | DONE; FAIL when the content says the task is infeasible |
| ``call_user()`` | asks the task's simulated user (the Thought is the question); without one, FAIL (as OSWorld's agent) |
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.actions import ActionError, Button, GuiCall, Point, check_point
from pytest_osworld.agents.native.keys import key_name, spaced_chord

SCROLL_CLICKS = 5
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_CALL = re.compile(r"^\s*([A-Za-z_]+)\s*\((.*)\)\s*$", re.DOTALL)
_CONTENT = re.compile(r"""^\s*content\s*=\s*(['"])(.*)\1\s*$""", re.DOTALL)
_DIRECTIONS = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
CLICKS: dict[str, tuple[Button, int]] = {
    "click": ("left", 1),
    "left_single": ("left", 1),
    "left_double": ("left", 2),
    "right_single": ("right", 1),
}


@dataclass(frozen=True)
class Step:
    """One call of an answer: a GUI action, or an ending."""

    source: str  # the call as written
    call: GuiCall | None = None
    ending: str | None = None  # finished, call_user


def split_answer(text: str) -> tuple[str, list[str]]:
    """The thought and the action calls of an answer. Raises :class:`ActionError` without ``Action:``."""
    if "Action:" not in text:
        raise ActionError("the answer has no 'Action:' line")
    head, _, actions = text.rpartition("Action:")
    thought = re.sub(r"^\s*(Thought|Reflection|Action_Summary):\s*", "", head.strip())
    calls = [part.strip() for part in re.split(r"\n\s*\n", actions.strip()) if part.strip()]
    if not calls:
        raise ActionError("the 'Action:' line is empty")
    return thought.strip(), calls


def parse_call(source: str, frame: Frame) -> Step:
    """One call as a :class:`Step`; raises :class:`ActionError` naming what is wrong."""
    name, args = _call_parts(source)
    if name in CLICKS:
        button, clicks = CLICKS[name]
        return Step(
            source, GuiCall("click", point=_point(args, frame, "start_box", "point"), button=button, clicks=clicks)
        )
    if name == "hover":
        return Step(source, GuiCall("move", point=_point(args, frame, "start_box", "point")))
    if name in ("drag", "select"):
        start = _point(args, frame, "start_box", "start_point")
        end = _point(args, frame, "end_box", "end_point")
        return Step(source, GuiCall("drag", path=(start, end)))
    if name == "hotkey":
        keys = args.get("key", args.get("hotkey", ""))
        return Step(source, GuiCall("key", chords=(spaced_chord(keys),)))
    if name == "press":
        return Step(source, GuiCall("key", chords=((key_name(args.get("key", "").strip(), letters_lower=True),),)))
    if name == "type":
        return Step(source, GuiCall("type", text=args.get("content", "")))
    if name == "scroll":
        direction = args.get("direction", "").strip().lower()
        if direction not in _DIRECTIONS:
            raise ActionError(f"scroll direction must be up, down, left or right, got {direction!r}")
        dx, dy = _DIRECTIONS[direction]
        point = _point(args, frame, "start_box", "point") if ("start_box" in args or "point" in args) else None
        return Step(source, GuiCall("scroll", point=point, scroll=(dx * SCROLL_CLICKS, dy * SCROLL_CLICKS)))
    if name == "wait":
        return Step(source, GuiCall("wait"))
    if name in ("finished", "call_user"):
        return Step(source, ending=name)
    raise ActionError(
        f"unknown action {name!r}; the actions are: click, left_double, right_single, drag, hotkey, type, "
        "scroll, wait, finished, call_user"
    )


def content_of(source: str) -> str:
    """``finished(content='...')``'s content ('' without one)."""
    try:
        return _call_parts(source)[1].get("content", "")
    except ActionError:
        return ""


def _call_parts(source: str) -> tuple[str, dict[str, str]]:
    match = _CALL.match(source)
    if match is None:
        raise ActionError(f"not an action call: {source[:120]!r}")
    name, inside = match.group(1), match.group(2)
    try:
        node = ast.parse(f"f({inside})", mode="eval").body
    except SyntaxError:
        # A typed text with quotes the model did not escape: take everything between the quotes.
        content = _CONTENT.match(inside)
        if content is None:
            raise ActionError(f"cannot read the arguments of {source[:120]!r}") from None
        return name, {"content": _unescape(content.group(2))}
    assert isinstance(node, ast.Call)
    args: dict[str, str] = {}
    for keyword in node.keywords:
        if (
            keyword.arg is None
            or not isinstance(keyword.value, ast.Constant)
            or not isinstance(keyword.value.value, str)
        ):
            raise ActionError(f"the arguments of {source[:120]!r} must be name='text'")
        args[keyword.arg] = keyword.value.value
    if node.args:
        raise ActionError(f"the arguments of {source[:120]!r} must be named (e.g. start_box='(x,y)')")
    return name, args


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n").replace("\\'", "'").replace('\\"', '"')


def _point(args: dict[str, str], frame: Frame, *names: str) -> Point:
    for name in names:
        if name in args:
            numbers = [float(n) for n in _NUMBER.findall(args[name])]
            if len(numbers) == 4:  # a box: its centre
                numbers = [(numbers[0] + numbers[2]) / 2, (numbers[1] + numbers[3]) / 2]
            if len(numbers) != 2:
                raise ActionError(f"{name} must be a point (x,y) or a box (x1,y1,x2,y2), got {args[name]!r}")
            return check_point(numbers, frame, name)
    raise ActionError(f"a point is needed: {' or '.join(names)}")
