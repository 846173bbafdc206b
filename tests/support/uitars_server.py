"""A local OpenAI-compatible chat server that answers as UI-TARS does, for tests.

Checked on every request (400 otherwise): no tools; the system message, then the prompt with the task
and UI-TARS's action space; the past answers this server gave, in order, with no more screenshots than
the runner keeps, each as the screen was taken (the model's processor resizes it by Qwen-VL's
``smart_resize``: the model's frame); the screen now last. Answers are ``Thought: ...`` and ``Action: ...`` in UI-TARS's grammar, points in the
frame the runner is set to (pixels of the resized screenshot, or 0..1000); a key sequence is several
actions separated by blank lines; FAIL is ``call_user()`` (OSWorld's UI-TARS agent takes it so).
"""

from __future__ import annotations

import math
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


def qwen_size(
    width: int, height: int, factor: int = 28, low: int = 100 * 28 * 28, high: int = 16384 * 28 * 28
) -> tuple[int, int]:
    """(width, height) of Qwen-VL's smart_resize, written here from its documented rule."""
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > high:
        beta = math.sqrt(height * width / high)
        h, w = math.floor(height / beta / factor) * factor, math.floor(width / beta / factor) * factor
    elif h * w < low:
        beta = math.sqrt(low / (height * width))
        h, w = math.ceil(height * beta / factor) * factor, math.ceil(width * beta / factor) * factor
    return w, h


def escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n")


class UITarsScript(ScriptedModel):
    def __init__(
        self,
        tasks: list[dict[str, Any]],
        *,
        screen: tuple[int, int] = (1920, 1080),
        relative: bool = False,
        keep_images: int = 3,
        image: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(tasks)
        self.screen = screen
        self.image = image or qwen_size(*screen)
        self.relative = relative
        self.keep_images = keep_images

    # --- checks

    def validate(self, request: RecordedRequest) -> None:
        body = request.body
        if "tools" in body:
            raise Invalid("UI-TARS answers in its own grammar: no tools")
        messages = body.get("messages")
        if not isinstance(messages, list) or len(messages) < 3 or messages[0].get("role") != "system":
            raise Invalid("messages must be the system message, the prompt, then the screens")
        prompt = messages[1].get("content")
        text = prompt[0].get("text", "") if isinstance(prompt, list) and prompt else ""
        if messages[1].get("role") != "user" or "## Action Space" not in text or "click(" not in text:
            raise Invalid("the second message must be the prompt with UI-TARS's action space")
        images = [
            p
            for m in messages
            if isinstance(m.get("content"), list)
            for p in m["content"]
            if p.get("type") == "image_url"
        ]
        if len(images) > self.keep_images + 1:
            raise Invalid(f"{len(images)} screenshots sent; the runner keeps {self.keep_images} and the screen now")
        # Screenshots go as taken: the model's processor resizes them to self.image (smart_resize).
        last = decode_image(images[-1]["image_url"]["url"]) if images else None
        if last is not None and last.size != self.screen:
            raise Invalid(f"a screenshot is {last.size}; the screen is {self.screen}")
        last = messages[-1]
        if last.get("role") != "user" or not any(p.get("type") == "image_url" for p in last.get("content") or []):
            raise Invalid("the last message must show the screen now")

    def conversation(self, request: RecordedRequest) -> Conversation:
        found = self.conversations.find(request.body["messages"][1]["content"][0]["text"])
        if found is None:
            raise Invalid("the prompt does not hold a known task's instruction")
        return found

    def check_answers(self, request: RecordedRequest, conversation: Conversation) -> Image.Image | None:
        messages = request.body["messages"]
        sent: list[str] = conversation.notes.setdefault("sent", [])
        if [m.get("content") for m in messages if m.get("role") == "assistant"] != sent:
            raise Invalid(f"the past answers are not the {len(sent)} this server gave")
        conversation.notes["texts"] = [p.get("text") for p in messages[-1]["content"] if p.get("type") == "text"]
        return decode_image(
            [p for p in messages[-1]["content"] if p.get("type") == "image_url"][-1]["image_url"]["url"]
        )

    # --- answers

    def overloaded(self, forever: bool) -> Status:
        body = {"error": {"message": "Overloaded", "type": "overloaded_error"}}
        return Status(529, body, retry_after=self.forever_retry_after if forever else self.retry_after)

    def render(self, turn: Turn, conversation: Conversation) -> Behaviour:
        number = conversation.answered
        first = turn[0]
        finish = "stop"
        if isinstance(first, Fault) and first.kind == "refusal":
            content, finish = "", "content_filter"
        elif isinstance(first, Fault) and first.kind == "cut":
            content, finish = "Thought: I will cli", "length"
        elif isinstance(first, Fault) and first.kind == "nonsense":
            content = "I am not sure what the screen shows."
        else:
            actions = [a for step in turn for a in self._actions(step)]
            content = "Thought: The next step of the task.\nAction: " + "\n\n".join(actions)
        if finish == "stop":
            conversation.notes["sent"].append(content)
        body = {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "model": "ui-tars-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        }
        return Json(body)

    def _actions(self, step: Any) -> list[str]:
        if isinstance(step, Keys):
            return [f"hotkey(key='{' '.join(chord)}')" for chord in step.chords]
        if isinstance(step, OpenTerminal):
            return ["hotkey(key='ctrl alt t')"]
        if isinstance(step, Write):
            return [f"type(content='{escaped(step.text)}')"]
        if isinstance(step, Click):
            x, y = self.model_point(step.x, step.y)
            return [f"click(start_box='<|box_start|>({x},{y})<|box_end|>')"]
        if isinstance(step, Pause | Look):
            return ["wait()"]
        if isinstance(step, Finish):
            return ["finished(content='The task is done.')" if step.feasible else "call_user()"]
        assert isinstance(step, Fault), step
        if step.kind == "unknown":
            return ["teleport(start_box='(10,10)')"]
        raise AssertionError(f"no UI-TARS answer for {step}")

    def model_point(self, x: int, y: int) -> tuple[int, int]:
        width, height = (1000, 1000) if self.relative else self.image
        return round(x * width / self.screen[0]), round(y * height / self.screen[1])
