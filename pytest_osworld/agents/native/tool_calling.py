"""The ``tool-calling`` runner: any OpenAI-compatible chat endpoint (vLLM, SGLang, LM Studio, the
providers' APIs) given one ``computer`` function.

The function takes the actions of Anthropic's computer tool (:mod:`computer_tool`, same names and
parameters) and two more: ``terminate`` (``status``: ``success`` is DONE, ``failure`` FAIL) and, for a
task with a simulated user, ``call_user`` (the question in ``text``). Coordinates are pixels of the
screenshot the model sees (the screen, or ``--osworld-screenshot-max-*``), or 0..1000 of its width and
height with ``--osworld-relative-coordinates``. Several tool calls in one answer (parallel tool calls)
run in order. Each call is answered with a ``tool`` message; the screen after the step (and any zoom
or screenshot asked for) follows in a user message, since a tool message holds text only. Only the
last ``history_images`` images stay in the conversation. An answer without a tool call is DONE (FAIL
when it says the task is infeasible); ``finish_reason`` ``length`` or a refusal drops the turn.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native import prompts
from pytest_osworld.agents.native.actions import ActionError
from pytest_osworld.agents.native.computer_tool import ACTIONS_20250124, parse_computer_input
from pytest_osworld.agents.native.images import screenshot_at
from pytest_osworld.agents.native.loop import (
    INFEASIBLE_PHRASE,
    CallAnswer,
    Conversation,
    ModelTurn,
    NativeRunner,
    ToolCall,
    View,
    chat_choice,
    data_url,
    items_of,
    obj,
)
from pytest_osworld.models.base import ModelApi
from pytest_osworld.models.transport import JsonReply, token_count

FUNCTION = "computer"
REMOVED = "(an earlier screenshot, removed from the conversation)"
_POINT = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}


def function_schema(asks_user: bool) -> dict[str, Any]:
    """The ``computer`` function as a chat API's ``tools`` entry."""
    actions = [*ACTIONS_20250124, "zoom", "terminate", *(["call_user"] if asks_user else [])]
    properties: dict[str, Any] = {
        "action": {"type": "string", "enum": actions, "description": "what to do"},
        "coordinate": {**_POINT, "description": "[x, y]: where (clicks, mouse_move, scroll; the drag's end)"},
        "start_coordinate": {**_POINT, "description": "[x, y]: where left_click_drag starts"},
        "text": {
            "type": "string",
            "description": "type: the text; key, hold_key: xdotool keys (ctrl+s); clicks, scroll: modifier keys "
            "held; call_user: the question",
        },
        "scroll_direction": {"type": "string", "enum": ["up", "down", "left", "right"]},
        "scroll_amount": {"type": "integer", "minimum": 0, "description": "wheel clicks"},
        "duration": {"type": "number", "minimum": 0, "description": "seconds (wait, hold_key)"},
        "region": {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 4,
            "maxItems": 4,
            "description": "zoom: [x0, y0, x1, y1]",
        },
        "status": {"type": "string", "enum": ["success", "failure"], "description": "terminate: how the task ended"},
    }
    return {
        "type": "function",
        "function": {
            "name": FUNCTION,
            "description": "Use the mouse and keyboard of the computer, look closer at the screen, or end the task.",
            "parameters": {"type": "object", "properties": properties, "required": ["action"]},
        },
    }


class ToolCallingRunner(NativeRunner):
    name: ClassVar[str] = "tool-calling"
    model_api: ClassVar[ModelApi] = "openai"

    def __init__(self, ctx: RunnerContext) -> None:
        super().__init__(ctx)
        self.conversation = Conversation()
        self.function = function_schema(ctx.asks_user)

    def view(self, observation: Observation) -> View:
        size = self.image_size(observation.screen_size)
        frame = Frame(screen=observation.screen_size, image=size, relative=self.settings.loop.relative_coordinates)
        return View(observation, screenshot_at(observation, size), frame)

    def exchange(self, view: View, answers: list[CallAnswer]) -> ModelTurn:
        items = self.conversation.items
        self.conversation.begin()
        if not items:
            items.append({"role": "system", "content": self._system(view.frame)})
        items += [{"role": "tool", "tool_call_id": a.call.id, "content": a.text} for a in answers]
        parts: list[dict[str, Any]] = [{"type": "text", "text": t} for t in self.news(view.observation)]
        if len(items) == 1:
            parts.append({"type": "text", "text": f"The task: {self.instruction}"})
        for answer in answers:
            call = answer.call.call
            if answer.image is not None and call is not None and call.informs:
                parts += [{"type": "text", "text": f"For {answer.call.id}:"}, _image(answer.image)]
        parts += [{"type": "text", "text": "The screen now:"}, _image(view.image)]
        items.append({"role": "user", "content": parts})
        _trim(items, max(1, self.history_images))
        body: dict[str, Any] = {
            "model": self.client.model,
            "messages": items,
            "tools": [self.function],
            "tool_choice": "auto",
            **self.sampling,
        }
        reply = self.send(self.client.completion_path(), body)
        turn, message = self._read(reply, view.frame)
        if turn.stop not in ("cut", "refusal"):
            kept = {"role": "assistant", "content": message.get("content")}
            if message.get("tool_calls"):
                kept["tool_calls"] = message["tool_calls"]
            items.append(kept)
        return turn

    def retract(self) -> None:
        self.conversation.drop_last_exchange()

    def _system(self, frame: Frame) -> str:
        text = prompts.TOOL_CALLING.format(
            password=self.settings.sandbox.client_password,
            coordinates="Coordinates are "
            + prompts.coordinates(frame.relative, frame.image[0], frame.image[1])
            + ", with [0, 0] at the top left.",
            infeasible=INFEASIBLE_PHRASE,
        )
        return text + (prompts.TOOL_CALLING_ASK_USER if self.asks_user else "")

    def _read(self, reply: JsonReply, frame: Frame) -> tuple[ModelTurn, dict[str, Any]]:
        data = reply.data
        message, finish, text = chat_choice(self.client, data)
        raw_calls = items_of(message.get("tool_calls"))
        calls = [self._call(c, frame) for c in raw_calls]
        refused = message.get("refusal") or finish == "content_filter"
        if isinstance(message.get("refusal"), str):
            text = message["refusal"]
        stop = "cut" if finish == "length" else "refusal" if refused else "tools" if calls else "end"
        usage = obj(data.get("usage"))
        shown = [text] if text else []
        if isinstance(message.get("refusal"), str):
            shown.append(f"refusal: {message['refusal']}")
        shown += [json.dumps({"tool_call": c.raw}, ensure_ascii=False) for c in calls]
        turn = ModelTurn(
            calls=calls,
            text=text,
            stop=stop,  # type: ignore[arg-type]
            stop_reason=str(finish) if finish else None,
            usage=self.usage(token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))),
            seconds=reply.seconds,
            response=self.client.redact("\n".join(shown)),
        )
        return turn, message

    def _call(self, raw: Any, frame: Frame) -> ToolCall:
        function = raw.get("function") if isinstance(raw, dict) else None
        call = ToolCall(id=str(raw.get("id", "")) if isinstance(raw, dict) else "", raw=function)
        if not isinstance(function, dict) or function.get("name") != FUNCTION:
            name = function.get("name") if isinstance(function, dict) else None
            call.error = f"unknown function {name!r}; the only function is {FUNCTION!r}"
            return call
        arguments = function.get("arguments")
        try:
            args = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            call.error = f"the arguments are not valid JSON: {str(arguments)[:200]!r}"
            return call
        call.raw = args
        try:
            self._meaning(call, args, frame)
        except ActionError as exc:
            call.error = str(exc)
        return call

    def _meaning(self, call: ToolCall, args: Any, frame: Frame) -> None:
        action = args.get("action") if isinstance(args, dict) else None
        if action == "terminate":
            status = args.get("status")
            if status not in ("success", "failure"):
                raise ActionError(f"terminate needs status success or failure, got {status!r}")
            call.ending = "DONE" if status == "success" else "FAIL"
        elif action == "call_user" and self.asks_user:
            question = args.get("text")
            if not isinstance(question, str) or not question.strip():
                raise ActionError("call_user needs the question as text")
            call.ending, call.question = "CALL_USER", question
        else:
            call.call = parse_computer_input(args, frame, zoom=True)


def _image(png: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(png)}}


def _trim(messages: list[dict[str, Any]], keep: int) -> None:
    """Keep the last ``keep`` images of the conversation; older ones become a short text."""
    places = [
        (message["content"], index)
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for index, part in enumerate(message["content"])
        if part.get("type") == "image_url"
    ]
    for holder, index in places[: max(0, len(places) - keep)]:
        holder[index] = {"type": "text", "text": REMOVED}
