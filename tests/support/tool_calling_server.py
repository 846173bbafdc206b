"""A local OpenAI-compatible chat server that calls one ``computer`` function, for tests.

Checked on every request (400 otherwise): one ``function`` tool named ``computer`` whose parameters are a
JSON schema object requiring ``action`` and offering the documented actions; ``tool_choice`` ``auto`` if
given; a system message first; every assistant ``tool_calls`` entry answered, right after it and in
order, by a ``tool`` message with its id and text content; the conversation the server had; images as
PNG data URLs, no more than the runner keeps, the screen now of the screenshot's size. Several steps of
one solution entry are answered as parallel tool calls in one message; DONE and FAIL are the function's
``terminate`` with status ``success`` or ``failure``.
"""

from __future__ import annotations

import json
from typing import Any

from PIL import Image

from tests.support.anthropic_server import computer_action
from tests.support.model_server import Behaviour, Json, RecordedRequest, Status
from tests.support.native_model import Invalid, ScriptedModel, decode_image
from tests.support.native_script import (
    Conversation,
    Fault,
    Finish,
    Look,
    Turn,
)

ACTIONS = {
    "key",
    "type",
    "mouse_move",
    "left_click",
    "right_click",
    "middle_click",
    "double_click",
    "triple_click",
    "left_click_drag",
    "left_mouse_down",
    "left_mouse_up",
    "scroll",
    "hold_key",
    "wait",
    "screenshot",
    "cursor_position",
    "zoom",
    "terminate",
}


class ToolCallingScript(ScriptedModel):
    def __init__(
        self,
        tasks: list[dict[str, Any]],
        *,
        screen: tuple[int, int] = (1920, 1080),
        image: tuple[int, int] | None = None,
        relative: bool = False,
        keep_images: int = 3,
    ) -> None:
        super().__init__(tasks)
        self.screen = screen
        self.image = image or screen
        self.relative = relative
        self.keep_images = keep_images

    # --- checks

    def validate(self, request: RecordedRequest) -> None:
        body = request.body
        tools = body.get("tools")
        if not isinstance(tools, list) or len(tools) != 1 or tools[0].get("type") != "function":
            raise Invalid("tools must hold the one computer function")
        function = tools[0].get("function") or {}
        parameters = function.get("parameters") or {}
        enum = set((parameters.get("properties") or {}).get("action", {}).get("enum") or [])
        if function.get("name") != "computer" or parameters.get("type") != "object":
            raise Invalid("the function must be named computer, its parameters a JSON schema object")
        if parameters.get("required") != ["action"] or not enum >= ACTIONS:
            raise Invalid(f"the computer function must require action and offer {sorted(ACTIONS)}")
        if body.get("tool_choice", "auto") != "auto":
            raise Invalid("tool_choice must be auto")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or messages[0].get("role") != "system":
            raise Invalid("messages must start with the system message")
        for index, message in enumerate(messages):
            calls = message.get("tool_calls") if message.get("role") == "assistant" else None
            if not calls:
                continue
            answers = messages[index + 1 : index + 1 + len(calls)]
            if [a.get("role") for a in answers] != ["tool"] * len(calls) or [
                a.get("tool_call_id") for a in answers
            ] != [c["id"] for c in calls]:
                raise Invalid(f"messages[{index}]'s tool calls must each be answered by a tool message, in order")
            if not all(isinstance(a.get("content"), str) for a in answers):
                raise Invalid("a tool message's content must be text")
        images = [
            p
            for m in messages
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for p in m["content"]
            if p.get("type") == "image_url"
        ]
        if len(images) > self.keep_images:
            raise Invalid(f"{len(images)} images sent; the runner keeps {self.keep_images}")
        if not all(str(p["image_url"].get("url", "")).startswith("data:image/png;base64,") for p in images):
            raise Invalid("an image must be a PNG data URL")

    def conversation(self, request: RecordedRequest) -> Conversation:
        users = [m for m in request.body["messages"] if m.get("role") == "user"]
        first = users[0].get("content") if users else None
        text = "\n".join(p.get("text", "") for p in first if p.get("type") == "text") if isinstance(first, list) else ""
        found = self.conversations.find(text)
        if found is None:
            raise Invalid("the first user message does not hold a known task's instruction")
        return found

    def check_answers(self, request: RecordedRequest, conversation: Conversation) -> Image.Image | None:
        messages = request.body["messages"]
        sent: list[dict[str, Any]] = conversation.notes.setdefault("sent", [])
        kept = [
            {"content": m.get("content"), "tool_calls": m.get("tool_calls")}
            for m in messages
            if m["role"] == "assistant"
        ]
        if kept != sent:
            raise Invalid(f"the conversation's assistant messages are not the {len(sent)} this server answered")
        last = messages[-1]
        if last.get("role") != "user" or not isinstance(last.get("content"), list):
            raise Invalid("the last message must be the user's, with the screen")
        if sent and sent[-1]["tool_calls"]:
            answers = [m for m in messages if m.get("role") == "tool"][-len(sent[-1]["tool_calls"]) :]
            conversation.notes.setdefault("answers", []).extend(a["content"] for a in answers)
        images = [p for p in last["content"] if p.get("type") == "image_url"]
        if not images:
            raise Invalid("the last user message must show the screen")
        screen = decode_image(images[-1]["image_url"]["url"])
        if screen.size != self.image:
            raise Invalid(f"the screen is {screen.size}; expected {self.image}")
        return screen

    # --- answers

    def overloaded(self, forever: bool) -> Status:
        body = {"error": {"message": "The server is overloaded", "type": "overloaded_error"}}
        return Status(503, body, retry_after=self.forever_retry_after if forever else self.retry_after)

    def render(self, turn: Turn, conversation: Conversation) -> Behaviour:
        number = conversation.answered
        message: dict[str, Any] = {"role": "assistant", "content": None}
        finish = "tool_calls"
        first = turn[0]
        if isinstance(first, Fault) and first.kind == "refusal":
            message["refusal"], finish = "I can't help with that.", "stop"
        elif isinstance(first, Fault) and first.kind == "cut":
            message["content"], finish = "I will cl", "length"
        else:
            calls = []
            for index, step in enumerate(turn):
                for n, arguments in enumerate(self._arguments(step)):
                    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
                    calls.append(
                        {
                            "id": f"call_{conversation.task_id}_{number}_{index}_{n}",
                            "type": "function",
                            "function": {"name": "computer", "arguments": text},
                        }
                    )
            message["tool_calls"] = calls
            conversation.notes["sent"].append({"content": None, "tool_calls": calls})
        body = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "model": "vlm-test",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        return Json(body)

    def _arguments(self, step: Any) -> list[dict[str, Any] | str]:
        gui = computer_action(step, self.model_point)
        if gui is not None:
            return [gui]
        if isinstance(step, Finish):
            return [{"action": "terminate", "status": "success" if step.feasible else "failure"}]
        if isinstance(step, Look):
            x0, y0 = self.model_point(*step.region[:2])
            x1, y1 = self.model_point(*step.region[2:])
            return [
                {"action": "screenshot"},
                {"action": "cursor_position"},
                {"action": "zoom", "region": [x0, y0, x1, y1]},
            ]
        assert isinstance(step, Fault), step
        if step.kind == "nonsense":
            return ['{"action": "left_click", "coordinate": [']
        if step.kind == "unknown":
            return [{"action": "teleport"}]
        raise AssertionError(f"no tool call for {step}")

    def model_point(self, x: int, y: int) -> tuple[int, int]:
        width, height = (1000, 1000) if self.relative else self.image
        return round(x * width / self.screen[0]), round(y * height / self.screen[1])
