"""The ``anthropic-computer`` runner: Anthropic's Messages API with its ``computer`` tool.

The tool is declared in the version ``--osworld-anthropic-tool`` names, with its beta header
(``computer_20250124``: ``computer-use-2025-01-24``; ``computer_20251124``, which adds ``zoom``:
``computer-use-2025-11-24``) and the display size of the screenshots the model gets: the screen scaled
down to Anthropic's image limits (or to ``--osworld-screenshot-max-*``). The first message is the task
and the screen; each next one answers every ``tool_use`` of the last answer with a ``tool_result`` (the
screen after the step with the last action's), and only the last ``history_images`` screenshots stay
in the conversation. ``stop_reason`` ``end_turn`` is DONE (FAIL when the text says the task is
infeasible), ``max_tokens`` and ``refusal`` drop the turn (Anthropic asks for a refused turn to be
removed before going on) and spend the step.
"""

from __future__ import annotations

import base64
import json
from typing import Any, ClassVar

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native import prompts
from pytest_osworld.agents.native.actions import ActionError
from pytest_osworld.agents.native.computer_tool import parse_computer_input
from pytest_osworld.agents.native.images import anthropic_size, screenshot_at
from pytest_osworld.agents.native.loop import CallAnswer, Conversation, ModelTurn, NativeRunner, ToolCall, View, obj
from pytest_osworld.models.anthropic_client import DEFAULT_MAX_TOKENS
from pytest_osworld.models.base import ModelApi, ModelError
from pytest_osworld.models.transport import JsonReply, token_count

BETAS = {"computer_20250124": "computer-use-2025-01-24", "computer_20251124": "computer-use-2025-11-24"}
TOOL_NAME = "computer"
REMOVED = "(an earlier screenshot, removed from the conversation)"


class AnthropicComputerRunner(NativeRunner):
    name: ClassVar[str] = "anthropic-computer"
    model_api: ClassVar[ModelApi] = "anthropic"

    def __init__(self, ctx: RunnerContext) -> None:
        super().__init__(ctx)
        settings = ctx.settings
        self.version = settings.model.anthropic_tool
        self.zoom = self.version == "computer_20251124" and settings.model.anthropic_zoom
        self.max_tokens = settings.model.max_tokens or DEFAULT_MAX_TOKENS
        self.conversation = Conversation()
        self._last: tuple[bytes, bytes, tuple[int, int]] = (b"", b"", (0, 0))  # screenshot, scaled, size

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        if self.settings.loop.screenshot_max_width or self.settings.loop.screenshot_max_height:
            return super().image_size(screen)
        return anthropic_size(*screen)

    def view(self, observation: Observation) -> View:
        size = self.image_size(observation.screen_size)
        if observation.screenshot != self._last[0] or size != self._last[2]:  # a still screen is scaled once
            self._last = (observation.screenshot, screenshot_at(observation, size), size)
        return View(observation, self._last[1], Frame(screen=observation.screen_size, image=size))

    def tool(self, frame: Frame) -> dict[str, Any]:
        tool: dict[str, Any] = {
            "type": self.version,
            "name": TOOL_NAME,
            "display_width_px": frame.image[0],
            "display_height_px": frame.image[1],
        }
        if self.zoom:
            tool["enable_zoom"] = True
        return tool

    def exchange(self, view: View, answers: list[CallAnswer]) -> ModelTurn:
        items = self.conversation.items
        self.conversation.begin()
        content: list[dict[str, Any]] = [_result(a) for a in answers]
        content += [{"type": "text", "text": t} for t in self.news(view.observation)]
        if not items:
            content.append({"type": "text", "text": f"The task: {self.instruction}"})
        if not items or not any(a.image for a in answers):
            content += [{"type": "text", "text": "The screen now:"}, _image(view.image)]
        items.append({"role": "user", "content": content})
        _trim(items, max(1, self.history_images))
        width, height = view.frame.image
        body: dict[str, Any] = {
            "model": self.client.model,
            "max_tokens": self.max_tokens,
            "system": prompts.COMPUTER_TOOL.format(
                password=self.settings.sandbox.client_password, width=width, height=height
            ),
            "tools": [self.tool(view.frame)],
            "messages": items,
            **{k: v for k, v in self.sampling.items() if k in ("temperature", "top_p")},
        }
        reply = self.send(self.client.completion_path(), body, headers={"anthropic-beta": BETAS[self.version]})
        turn = self._read(reply, view.frame)
        if turn.stop not in ("cut", "refusal"):
            items.append({"role": "assistant", "content": reply.data["content"]})
        return turn

    def retract(self) -> None:
        self.conversation.drop_last_exchange()

    def _read(self, reply: JsonReply, frame: Frame) -> ModelTurn:
        data = reply.data
        content = data.get("content")
        if not isinstance(content, list) or not all(isinstance(b, dict) for b in content):
            raise ModelError(self.client.redact(f"the model endpoint's answer has no content blocks: {_snippet(data)}"))
        text = "\n".join(b["text"] for b in content if b.get("type") == "text" and isinstance(b.get("text"), str))
        calls = [self._call(b, frame) for b in content if b.get("type") == "tool_use"]
        stop_reason = data.get("stop_reason")
        reason = stop_reason if isinstance(stop_reason, str) else None
        stop = {"max_tokens": "cut", "refusal": "refusal"}.get(reason or "", "tools" if calls else "end")
        usage = obj(data.get("usage"))
        prompt = sum(
            token_count(usage.get(k))
            for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        shown = [text] if text else []
        shown += [json.dumps({"tool_use": c.raw}, ensure_ascii=False) for c in calls]
        return ModelTurn(
            calls=calls,
            text=text,
            stop=stop,  # type: ignore[arg-type]
            stop_reason=reason,
            usage=self.usage(prompt, token_count(usage.get("output_tokens"))),
            seconds=reply.seconds,
            response=self.client.redact("\n".join(shown)),
        )

    def _call(self, block: dict[str, Any], frame: Frame) -> ToolCall:
        call = ToolCall(id=str(block.get("id", "")), raw=block.get("input"))
        if block.get("name") != TOOL_NAME:
            call.error = f"unknown tool {block.get('name')!r}; the only tool is {TOOL_NAME!r}"
            return call
        try:
            call.call = parse_computer_input(block.get("input"), frame, zoom=self.zoom)
        except ActionError as exc:
            call.error = str(exc)
        return call


def _image(png: bytes) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _b64(png)}}


def _b64(png: bytes) -> str:
    return base64.b64encode(png).decode("ascii")


def _result(answer: CallAnswer) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": answer.text}]
    if answer.image is not None:
        content.append(_image(answer.image))
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": answer.call.id, "content": content}
    if answer.error:
        block["is_error"] = True
    return block


def _trim(messages: list[dict[str, Any]], keep: int) -> None:
    """Keep the last ``keep`` images of the conversation; older ones become a short text."""
    places: list[tuple[list[dict[str, Any]], int]] = []
    for message in messages:
        if message["role"] != "user":
            continue
        for block in message["content"]:
            holder = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(holder, list):
                places += [(holder, i) for i, b in enumerate(holder) if b.get("type") == "image"]
        places += [(message["content"], i) for i, b in enumerate(message["content"]) if b.get("type") == "image"]
    # Order of appearance: a message's tool results come before its own blocks, as they were written.
    for holder, index in places[: max(0, len(places) - keep)]:
        holder[index] = {"type": "text", "text": REMOVED}


def _snippet(data: Any) -> str:
    return json.dumps(data)[:300]
