"""A local model server that speaks OpenAI's Responses API with the ``computer_use_preview`` tool, for tests.

Checked on every request (400 otherwise): exactly one ``computer_use_preview`` tool with the display
size of the screen and the environment asked for, ``truncation: auto``, a ``previous_response_id`` this
server gave (never one of an incomplete response), or, when items are sent back, every item of the
conversation in order with the model's reasoning items; every ``computer_call`` of the last response
answered by a ``computer_call_output`` with its ``call_id``, a screenshot of the display's size, and the
pending safety checks acknowledged exactly when the runner is allowed to go on past them.

As the preview model, a response holds a reasoning item and one ``computer_call`` (or a final message).
"""

from __future__ import annotations

import itertools
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

CUA_KEYS = {
    "ctrl": "CTRL",
    "alt": "ALT",
    "shift": "SHIFT",
    "enter": "ENTER",
    "esc": "ESC",
    "tab": "TAB",
    "home": "HOME",
    "end": "END",
    "up": "ARROWUP",
    "down": "ARROWDOWN",
    "left": "ARROWLEFT",
    "right": "ARROWRIGHT",
    "backspace": "BACKSPACE",
    "delete": "DELETE",
}
SAFETY_CHECK = {
    "id": "cu_sc_1",
    "code": "malicious_instructions",
    "message": "We've detected instructions that may cause the application to perform unauthorized actions.",
}


class OpenAIComputerScript(ScriptedModel):
    def __init__(
        self,
        tasks: list[dict[str, Any]],
        *,
        display: tuple[int, int] = (1920, 1080),
        screen: tuple[int, int] = (1920, 1080),
        environment: str = "linux",
        chaining: str = "previous_response_id",
        acknowledges: bool = False,
    ) -> None:
        super().__init__(tasks)
        self.display = display
        self.screen = screen
        self.environment = environment
        self.chaining = chaining
        self.acknowledges = acknowledges
        self.responses: dict[
            str, tuple[Conversation, list[dict[str, Any]], bool]
        ] = {}  # id -> (conv, output, complete)
        self.ids = itertools.count(1)

    # --- checks

    def validate(self, request: RecordedRequest) -> None:
        body = request.body
        tool = {
            "type": "computer_use_preview",
            "display_width": self.display[0],
            "display_height": self.display[1],
            "environment": self.environment,
        }
        if body.get("tools") != [tool]:
            raise Invalid(f"tools must be {[tool]}, got {body.get('tools')}")
        if body.get("truncation") != "auto":
            raise Invalid("the computer_use_preview tool requires truncation: auto")
        if not isinstance(body.get("input"), list) or not body["input"]:
            raise Invalid("input must be a non-empty list of items")
        reasoning = body.get("reasoning", {"summary": "auto"})
        if not isinstance(reasoning, dict) or reasoning.get("summary") not in ("auto", "concise", "detailed"):
            raise Invalid(f"reasoning.summary must be auto, concise or detailed, got {reasoning}")
        if self.chaining == "items" and "previous_response_id" in body:
            raise Invalid("turns are chained by sending the items back here, not by previous_response_id")
        for item in body["input"]:
            if isinstance(item, dict) and item.get("type") == "computer_call_output":
                output = item.get("output") or {}
                if output.get("type") not in ("computer_screenshot", "input_image") or not str(
                    output.get("image_url", "")
                ).startswith("data:image/png;base64,"):
                    raise Invalid("a computer_call_output's output must be a computer_screenshot with a PNG data URL")

    def conversation(self, request: RecordedRequest) -> Conversation:
        body = request.body
        previous = body.get("previous_response_id")
        if previous is not None:
            if previous not in self.responses:
                raise Invalid(f"previous_response_id {previous!r} was not given by this server")
            conversation, _, complete = self.responses[previous]
            if not complete:
                raise Invalid("previous_response_id names an incomplete response")
            return conversation
        first = self._first_user(body["input"])
        found = self.conversations.find(first or "")
        if found is None:
            raise Invalid("the first input item does not hold a known task's instruction")
        return found

    @staticmethod
    def _first_user(items: list[Any]) -> str | None:
        first = items[0]
        if isinstance(first, dict) and first.get("role") == "user" and isinstance(first.get("content"), list):
            return "\n".join(str(p.get("text", "")) for p in first["content"] if p.get("type") == "input_text")
        return None

    def check_answers(self, request: RecordedRequest, conversation: Conversation) -> Image.Image | None:
        body = request.body
        items = body["input"]
        history: list[Any] = conversation.notes.setdefault("items", [])
        last = conversation.notes.get("last_id")
        if self.chaining == "previous_response_id" and last is not None and "previous_response_id" not in body:
            raise Invalid("turns must be chained by previous_response_id")
        if "previous_response_id" in body:
            if body["previous_response_id"] != last:
                raise Invalid("previous_response_id must name the last complete response")
            new = items
        else:
            if items[: len(history)] != history:
                raise Invalid("every earlier item (the model's reasoning items included) must be sent back in order")
            new = items[len(history) :]
        calls = [i for i in self.responses[last][1] if i.get("type") == "computer_call"] if last else []
        outputs = [i for i in new if isinstance(i, dict) and i.get("type") == "computer_call_output"]
        if [o.get("call_id") for o in outputs] != [c["call_id"] for c in calls]:
            raise Invalid("each computer_call must be answered by a computer_call_output with its call_id")
        for call, output in zip(calls, outputs):
            pending = call.get("pending_safety_checks") or []
            acknowledged = output.get("acknowledged_safety_checks") or []
            if pending and acknowledged != pending:
                raise Invalid("a computer_call's pending safety checks must be acknowledged to go on")
            if pending:
                conversation.notes["acknowledged"] = acknowledged
        conversation.notes["pending_new"] = new
        images = [o["output"]["image_url"] for o in outputs]
        images += [
            p["image_url"]
            for i in new
            if i.get("role") == "user"
            for p in i["content"]
            if p.get("type") == "input_image"
        ]
        if not images:
            return None
        screen = decode_image(images[-1])
        if screen.size != self.display:
            raise Invalid(f"a screenshot is {screen.size}; the tool declares {self.display}")
        return screen

    # --- answers

    def overloaded(self, forever: bool) -> Status:
        body = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
        return Status(429, body, retry_after=self.forever_retry_after if forever else self.retry_after)

    def render(self, turn: Turn, conversation: Conversation) -> Behaviour:
        step, rest = turn[0], turn[1:]
        if isinstance(step, Keys) and len(step.chords) > 1:  # the preview model presses one chord per call
            step, rest = Keys(step.chords[:1]), (Keys(step.chords[1:]), *rest)
        if rest:  # one computer_call per response: the rest of the turn comes next
            conversation.turns.insert(conversation.index, rest)
        response_id = f"resp_{next(self.ids)}"
        number = conversation.answered
        output: list[dict[str, Any]] = [
            {"type": "reasoning", "id": f"rs_{number}", "summary": [{"type": "summary_text", "text": "Next step."}]}
        ]
        body: dict[str, Any] = {"id": response_id, "object": "response", "status": "completed"}
        if isinstance(step, Finish):
            text = "Done." if step.feasible else "I cannot do it: the task is infeasible."
            output.append(_message([{"type": "output_text", "text": text, "annotations": []}]))
        elif isinstance(step, Fault) and step.kind == "refusal":
            output.append(_message([{"type": "refusal", "refusal": "I can't help with that."}]))
        elif isinstance(step, Fault) and step.kind == "cut":
            body.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
        else:
            call: dict[str, Any] = {
                "type": "computer_call",
                "id": f"cu_{number}",
                "call_id": f"call_{conversation.task_id}_{number}",
                "action": self._action(step),
                "pending_safety_checks": [SAFETY_CHECK] if isinstance(step, Fault) and step.kind == "safety" else [],
                "status": "completed",
            }
            output.append(call)
        body.update(output=output, usage={"input_tokens": 100, "output_tokens": 20, "total_tokens": 120})
        complete = body["status"] == "completed"
        self.responses[response_id] = (conversation, output, complete)
        if complete:
            conversation.notes["items"] = [
                *conversation.notes.get("items", []),
                *conversation.notes.pop("pending_new", []),
                *output,
            ]
            conversation.notes["last_id"] = response_id
        return Json(body)

    def _action(self, step: Any) -> dict[str, Any]:
        if isinstance(step, Keys):
            return {"type": "keypress", "keys": [CUA_KEYS.get(k, k.upper()) for k in step.chords[0]]}
        if isinstance(step, OpenTerminal):
            return {"type": "keypress", "keys": ["CTRL", "ALT", "T"]}
        if isinstance(step, Write):
            return {"type": "type", "text": step.text}
        if isinstance(step, Click):
            x, y = round(step.x * self.display[0] / self.screen[0]), round(step.y * self.display[1] / self.screen[1])
            return {"type": "click", "button": "left", "x": x, "y": y}
        if isinstance(step, Pause):
            return {"type": "wait"}
        if isinstance(step, Look):
            return {"type": "screenshot"}
        assert isinstance(step, Fault), step
        if step.kind == "nonsense":
            return {"type": "click", "button": "left", "x": "left", "y": None}
        if step.kind == "unknown":
            return {"type": "teleport", "x": 10, "y": 10}
        if step.kind == "safety":
            return {"type": "click", "button": "left", "x": 960, "y": 540}
        raise AssertionError(f"no computer_call for {step}")


def _message(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": content}
