"""A local model server that speaks Anthropic's Messages API with the ``computer`` tool, for tests.

Requests are checked against the documented shapes and answered 400 when they break one: the
``anthropic-version`` header and the beta header of the tool version, exactly one ``computer`` tool of
that version with the display size Anthropic's image limits give the screen (and ``enable_zoom`` only on
``computer_20251124``), turns alternating from the user's, every ``tool_use`` answered first thing in
the next user turn by a ``tool_result`` with its id, the screenshots of the display's size and no more
of them than the runner keeps, the conversation the server had (a dropped turn left out). Answers come
from the task's reference solution (tests/support/native_script.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from PIL import Image

from tests.support.model_server import Behaviour, Json, RecordedRequest, Status
from tests.support.native_model import Invalid, ScriptedModel, decode_image
from tests.support.native_script import (
    Click,
    Conversation,
    Fault,
    Finish,
    Keys,
    Look,
    OpenTerminal,
    Pause,
    Turn,
    Write,
)

VERSION_HEADER = "2023-06-01"
BETAS = {"computer_20250124": "computer-use-2025-01-24", "computer_20251124": "computer-use-2025-11-24"}
XDOTOOL = {
    "enter": "Return",
    "home": "Home",
    "end": "End",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "tab": "Tab",
    "esc": "Escape",
    "backspace": "BackSpace",
    "delete": "Delete",
    "pageup": "Page_Up",
    "pagedown": "Page_Down",
}
CURSOR = re.compile(r"^X=\d+,Y=\d+$")


def display_size(width: int, height: int) -> tuple[int, int]:
    """The screenshot size Anthropic's documented image limits leave (long edge 1568, about 1.15 MP)."""
    scale = min(1.0, 1568 / max(width, height), math.sqrt(1_150_000 / (width * height)))
    return int(width * scale), int(height * scale)


def computer_action(step: Any, model_point: Callable[[int, int], tuple[int, int]]) -> dict[str, Any] | None:
    """The computer tool's input for a plan's GUI step (the tool-calling function takes the same actions);
    None for a step of another kind. ``model_point`` maps a screen point into the model's frame."""
    if isinstance(step, Keys):
        return {"action": "key", "text": xdotool_keys(step.chords)}
    if isinstance(step, OpenTerminal):
        return {"action": "key", "text": "ctrl+alt+t"}
    if isinstance(step, Write):
        return {"action": "type", "text": step.text}
    if isinstance(step, Click):
        return {"action": "left_click", "coordinate": list(model_point(step.x, step.y))}
    if isinstance(step, Pause):
        return {"action": "wait", "duration": step.seconds}
    return None


def xdotool_keys(chords: tuple[tuple[str, ...], ...]) -> str:
    return " ".join("+".join(XDOTOOL.get(k, k) for k in chord) for chord in chords)


class AnthropicScript(ScriptedModel):
    def __init__(
        self,
        tasks: list[dict[str, Any]],
        *,
        version: str = "computer_20251124",
        screen: tuple[int, int] = (1920, 1080),
        keep_images: int = 3,
        display: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(tasks)
        self.version = version
        self.screen = screen
        self.display = display or display_size(*screen)
        self.keep_images = keep_images

    # --- checks

    def validate(self, request: RecordedRequest) -> None:
        headers, body = request.headers, request.body
        if headers.get("anthropic-version") != VERSION_HEADER:
            raise Invalid(f"anthropic-version must be {VERSION_HEADER}")
        betas = [b.strip() for b in headers.get("anthropic-beta", "").split(",")]
        if BETAS[self.version] not in betas:
            raise Invalid(f"the {self.version} tool needs the beta header {BETAS[self.version]}, got {betas}")
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            raise Invalid("max_tokens is required (a positive integer)")
        tools = body.get("tools")
        tool = {
            "type": self.version,
            "name": "computer",
            "display_width_px": self.display[0],
            "display_height_px": self.display[1],
        }
        if self.version == "computer_20251124":
            tool["enable_zoom"] = True
        if tools != [tool]:
            raise Invalid(f"tools must be {[tool]}, got {tools}")
        if not isinstance(body.get("system", ""), str):
            raise Invalid("system must be a string here")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Invalid("messages must be a non-empty list")
        for index, message in enumerate(messages):
            expected = "user" if index % 2 == 0 else "assistant"
            if not isinstance(message, dict) or message.get("role") != expected:
                raise Invalid(f"messages[{index}] must be the {expected}'s (turns alternate from the user's)")
            if not isinstance(message.get("content"), list) or not message["content"]:
                raise Invalid(f"messages[{index}].content must be a non-empty list of blocks")
        if messages[-1]["role"] != "user":
            raise Invalid("the last message must be the user's")
        images = [b for b in _blocks(messages) if b.get("type") == "image"]
        if len(images) > self.keep_images:
            raise Invalid(f"{len(images)} screenshots sent; the runner keeps {self.keep_images}")
        for image in images:
            source = image.get("source") or {}
            if source.get("type") != "base64" or source.get("media_type") != "image/png":
                raise Invalid("an image must be a base64 PNG source")

    def conversation(self, request: RecordedRequest) -> Conversation:
        first = request.body["messages"][0]["content"]
        text = "\n".join(b.get("text", "") for b in first if b.get("type") == "text")
        found = self.conversations.find(text)
        if found is None:
            raise Invalid("the first message does not hold a known task's instruction")
        return found

    def check_answers(self, request: RecordedRequest, conversation: Conversation) -> Image.Image | None:
        messages = request.body["messages"]
        sent: list[list[dict[str, Any]]] = conversation.notes.setdefault("sent", [])
        kept = [m["content"] for m in messages if m["role"] == "assistant"]
        if kept != sent:
            raise Invalid(f"the conversation's assistant turns are not the {len(sent)} this server answered")
        last_user = messages[-1]["content"]
        if not sent:
            return _screen_of(last_user, self.display)
        calls = [b for b in sent[-1] if b.get("type") == "tool_use"]
        results = [b for b in last_user if b.get("type") == "tool_result"]
        if [r.get("tool_use_id") for r in results] != [c["id"] for c in calls] or last_user[: len(results)] != results:
            raise Invalid("each tool_use must be answered by a tool_result with its id, first in the next user turn")
        self._note_answers(conversation, calls, results)
        return _screen_of(last_user, self.display, calls)

    def _note_answers(
        self, conversation: Conversation, calls: list[dict[str, Any]], results: list[dict[str, Any]]
    ) -> None:
        for call, result in zip(calls, results):
            action = call["input"].get("action")
            content = result.get("content") or []
            texts = [b.get("text", "") for b in content if b.get("type") == "text"]
            images = [decode_image(b["source"]["data"]).size for b in content if b.get("type") == "image"]
            conversation.notes.setdefault("answers", []).append(
                {"action": action, "error": bool(result.get("is_error")), "texts": texts, "images": images}
            )
            if action == "cursor_position" and not result.get("is_error") and not any(CURSOR.match(t) for t in texts):
                raise Invalid(f"cursor_position must be answered X=..,Y=.., got {texts}")

    # --- answers

    def overloaded(self, forever: bool) -> Status:
        body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        return Status(529, body, retry_after=self.forever_retry_after if forever else self.retry_after)

    def render(self, turn: Turn, conversation: Conversation) -> Behaviour:
        number = conversation.answered
        blocks: list[dict[str, Any]] = []
        stop = "tool_use"
        for index, step in enumerate(turn):
            call_id = f"toolu_{conversation.task_id}_{number}_{index}"
            if isinstance(step, Finish):
                text = "The task is done." if step.feasible else "I cannot do this here: the task is infeasible."
                blocks.append({"type": "text", "text": text})
                stop = "end_turn"
            elif isinstance(step, Fault) and step.kind in ("refusal", "cut"):
                blocks.append({"type": "text", "text": "I will not" if step.kind == "refusal" else "Let me cl"})
                if step.kind == "cut":
                    blocks.append({"type": "tool_use", "id": call_id, "name": "computer", "input": {}})
                stop = "refusal" if step.kind == "refusal" else "max_tokens"
            else:
                blocks += [
                    {"type": "tool_use", "id": f"{call_id}_{n}", "name": "computer", "input": i}
                    for n, i in enumerate(self._inputs(step))
                ]
        if stop in ("tool_use", "end_turn"):
            conversation.notes["sent"].append(blocks)
        body = {
            "id": f"msg_{conversation.task_id}_{number}",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }
        return Json(body)

    def _inputs(self, step: Any) -> list[dict[str, Any]]:
        gui = computer_action(step, self._model_point)
        if gui is not None:
            return [gui]
        if isinstance(step, Look):
            looks: list[dict[str, Any]] = [{"action": "screenshot"}, {"action": "cursor_position"}]
            if self.version == "computer_20251124":
                x0, y0 = self._model_point(*step.region[:2])
                x1, y1 = self._model_point(*step.region[2:])
                looks.append({"action": "zoom", "region": [x0, y0, x1, y1]})
            return looks
        assert isinstance(step, Fault), step
        if step.kind == "nonsense":
            return [{"action": "left_click", "coordinate": "the middle of the screen"}]
        if step.kind == "unknown":
            return [{"action": "teleport", "coordinate": [10, 10]}]
        raise AssertionError(f"no Anthropic answer for {step}")

    def _model_point(self, x: int, y: int) -> tuple[int, int]:
        return round(x * self.display[0] / self.screen[0]), round(y * self.display[1] / self.screen[1])


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for message in messages:
        for block in message["content"]:
            found.append(block)
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                found += block["content"]
    return found


def _screen_of(
    content: list[dict[str, Any]], display: tuple[int, int], calls: list[dict[str, Any]] | None = None
) -> Image.Image | None:
    """The screen a user turn shows: its own screenshot, else the last non-zoom tool result's image."""
    zooms = {c["id"] for c in calls or [] if c["input"].get("action") == "zoom"}
    screens = []
    for block in content:
        if block.get("type") == "image":
            screens.append(block)
        elif block.get("type") == "tool_result" and block.get("tool_use_id") not in zooms:
            screens += [b for b in block.get("content") or [] if b.get("type") == "image"]
    if not screens:
        return None
    image = decode_image(screens[-1]["source"]["data"])
    if image.size != display:
        raise Invalid(f"a screenshot is {image.size[0]}x{image.size[1]}; the tool declares {display[0]}x{display[1]}")
    return image
