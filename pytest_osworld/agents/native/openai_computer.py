"""The ``openai-computer`` runner: OpenAI's Responses API with the ``computer_use_preview`` tool.

The tool declares the display (the screenshot's size: the screen, or ``--osworld-screenshot-max-*``)
and ``--osworld-openai-environment``; requests set ``truncation: auto`` (the tool requires it) and ask
for a concise reasoning summary. The first input is the task with the screen; each next one answers
the last ``computer_call`` with a ``computer_call_output`` holding the screen after the step. Turns
are chained by ``previous_response_id`` (the default), or, with ``--osworld-openai-chaining items``,
by sending every earlier item back, the model's reasoning items included.

A ``computer_call`` with ``pending_safety_checks`` is acknowledged in its output only with
``--osworld-acknowledge-safety-checks``; otherwise the episode ends there, recorded as a stop. An answer
without a ``computer_call`` is the model's last word: DONE, or FAIL when it says the task is infeasible;
a refusal ends the episode; an answer cut at ``max_output_tokens`` is dropped and the step spent.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native import prompts
from pytest_osworld.agents.native.actions import ActionError, GuiCall, check_point
from pytest_osworld.agents.native.images import screenshot_at
from pytest_osworld.agents.native.keys import cua_chord
from pytest_osworld.agents.native.loop import CallAnswer, ModelTurn, NativeRunner, ToolCall, View, data_url, obj
from pytest_osworld.models.base import ModelApi, ModelError
from pytest_osworld.models.transport import JsonReply, token_count

TOOL_TYPE = "computer_use_preview"
PATH = "responses"
BUTTONS = {"left": "left", "right": "right", "wheel": "middle", "middle": "middle"}
WAIT_S = 1.0  # a wait has no duration: one second, as OSWorld's own agent for this model waits
MAX_SCROLL = 100  # wheel clicks in one scroll (scroll_x/scroll_y count clicks, as OpenAI's own desktop example)


class OpenAIComputerRunner(NativeRunner):
    name: ClassVar[str] = "openai-computer"
    model_api: ClassVar[ModelApi] = "openai"
    refusal_ends: ClassVar[bool] = True

    def __init__(self, ctx: RunnerContext) -> None:
        super().__init__(ctx)
        settings = ctx.settings
        self.chain_by_id = settings.model.openai_chaining == "previous_response_id"
        self.acknowledge = settings.model.acknowledge_safety_checks
        self.previous_id: str | None = None
        self.items: list[Any] = []  # every item so far (items chaining)
        self.checks: dict[str, list[dict[str, Any]]] = {}  # call_id -> safety checks to acknowledge
        self._before: tuple[str | None, int] = (None, 0)

    def view(self, observation: Observation) -> View:
        size = self.image_size(observation.screen_size)
        return View(observation, screenshot_at(observation, size), Frame(screen=observation.screen_size, image=size))

    def tool(self, frame: Frame) -> dict[str, Any]:
        return {
            "type": TOOL_TYPE,
            "display_width": frame.image[0],
            "display_height": frame.image[1],
            "environment": self.settings.model.openai_environment,
        }

    def exchange(self, view: View, answers: list[CallAnswer]) -> ModelTurn:
        self._before = (self.previous_id, len(self.items))
        new: list[dict[str, Any]] = [self._output(a, view) for a in answers]
        notes = [f"Your last action could not be carried out: {a.text}" for a in answers if a.error]
        notes += self.news(view.observation)
        if self.previous_id is None and not self.items:
            content = [
                {"type": "input_text", "text": f"The task: {self.instruction}"},
                {"type": "input_image", "image_url": data_url(view.image)},
            ]
            new.append({"role": "user", "content": content})
        if notes:
            new.append({"role": "user", "content": [{"type": "input_text", "text": n} for n in notes]})
        body: dict[str, Any] = {
            "model": self.client.model,
            "tools": [self.tool(view.frame)],
            "input": new if self.chain_by_id else [*self.items, *new],
            "instructions": prompts.OPENAI_COMPUTER.format(password=self.settings.sandbox.client_password),
            "truncation": "auto",
            "reasoning": {"summary": "concise"},
            **{k: v for k, v in self.sampling.items() if k in ("temperature", "top_p")},
        }
        if self.settings.model.max_tokens:
            body["max_output_tokens"] = self.settings.model.max_tokens
        if self.chain_by_id and self.previous_id is not None:
            body["previous_response_id"] = self.previous_id
        reply = self.send(PATH, body)
        turn = self._read(reply, view.frame)
        if turn.stop not in ("cut", "refusal"):
            self.previous_id = str(reply.data.get("id") or "") or None
            if not self.chain_by_id:
                self.items += [*new, *reply.data["output"]]
        return turn

    def retract(self) -> None:
        self.previous_id, kept = self._before
        del self.items[kept:]

    def _output(self, answer: CallAnswer, view: View) -> dict[str, Any]:
        # Every computer_call_output is a screenshot; what went wrong is said in a message after it.
        item: dict[str, Any] = {
            "type": "computer_call_output",
            "call_id": answer.call.id,
            "output": {"type": "computer_screenshot", "image_url": data_url(answer.image or view.image)},
        }
        acknowledged = self.checks.pop(answer.call.id, None)
        if acknowledged:
            item["acknowledged_safety_checks"] = acknowledged
        return item

    def _read(self, reply: JsonReply, frame: Frame) -> ModelTurn:
        data = reply.data
        output = data.get("output")
        status = data.get("status")
        if status == "failed" or not isinstance(output, list):
            error = data.get("error")
            raise ModelError(
                self.client.redact(f"the model endpoint's response failed: {json.dumps(error or data)[:300]}")
            )
        calls: list[ToolCall] = []
        texts: list[str] = []  # the model's messages: its last word when it calls nothing
        thoughts: list[str] = []  # reasoning summaries (recorded, never read as an ending)
        refused: list[str] = []
        halts: list[str] = []
        for item in output:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "computer_call":
                calls.append(self._call(item, frame))
                pending = item.get("pending_safety_checks") or []
                if pending and self.acknowledge:
                    self.checks[str(item.get("call_id"))] = pending
                elif pending:
                    halts.append(
                        ", ".join(f"{c.get('code')}: {c.get('message')}" for c in pending if isinstance(c, dict))
                    )
            elif item.get("type") == "message":
                for part in item.get("content") or []:
                    if isinstance(part, dict) and part.get("type") == "output_text":
                        texts.append(str(part.get("text", "")))
                    elif isinstance(part, dict) and part.get("type") == "refusal":
                        refused.append(str(part.get("refusal", "")))
            elif item.get("type") == "reasoning":
                thoughts += [str(s.get("text", "")) for s in item.get("summary") or [] if isinstance(s, dict)]
        incomplete = obj(data.get("incomplete_details"))
        reason = incomplete.get("reason") if status == "incomplete" else status
        stop = "cut" if status == "incomplete" else "refusal" if refused else "tools" if calls else "end"
        usage = obj(data.get("usage"))
        shown = thoughts + texts + [f"refusal: {r}" for r in refused]
        shown += [json.dumps({"computer_call": c.raw}, ensure_ascii=False) for c in calls]
        halt = None
        if halts and stop == "tools":
            halt = (
                f"the model asked to acknowledge pending safety checks ({'; '.join(halts)}); "
                "--osworld-acknowledge-safety-checks is not set"
            )
        return ModelTurn(
            calls=calls,
            text="\n".join(refused or texts),
            stop=stop,  # type: ignore[arg-type]
            stop_reason=str(reason) if reason else None,
            usage=self.usage(token_count(usage.get("input_tokens")), token_count(usage.get("output_tokens"))),
            seconds=reply.seconds,
            response=self.client.redact("\n".join(shown)),
            halt=self.client.redact(halt) if halt else None,
        )

    def _call(self, item: dict[str, Any], frame: Frame) -> ToolCall:
        call = ToolCall(id=str(item.get("call_id", "")), raw=item.get("action"))
        try:
            call.call = parse_cua_action(item.get("action"), frame)
        except ActionError as exc:
            call.error = str(exc)
        return call


def parse_cua_action(action: Any, frame: Frame) -> GuiCall:
    """A ``computer_call``'s action as a :class:`GuiCall`; raises :class:`ActionError`."""
    if not isinstance(action, dict):
        raise ActionError(f"a computer_call's action must be an object, got {type(action).__name__}")
    kind = action.get("type")
    if kind in ("click", "double_click", "move"):
        point = check_point([action.get("x"), action.get("y")], frame, "x, y")
        if kind == "move":
            return GuiCall("move", point=point)
        if kind == "double_click":
            return GuiCall("click", point=point, clicks=2)
        button = action.get("button", "left")
        if button not in BUTTONS:
            raise ActionError(f"click button {button!r} cannot be pressed here (left, right or wheel)")
        return GuiCall("click", point=point, button=BUTTONS[button])  # type: ignore[arg-type]
    if kind == "drag":
        path = action.get("path")
        if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, dict) for p in path):
            raise ActionError("drag needs a path of at least two points {x, y}")
        return GuiCall("drag", path=tuple(check_point([p.get("x"), p.get("y")], frame, "path") for p in path))
    if kind == "keypress":
        keys = action.get("keys")
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            raise ActionError(f"keypress needs keys as a list of names, got {keys!r}")
        return GuiCall("key", chords=(cua_chord(keys),))
    if kind == "scroll":
        point = check_point([action.get("x"), action.get("y")], frame, "x, y")
        clicks = [action.get("scroll_x", 0), action.get("scroll_y", 0)]
        if not all(isinstance(c, int) and not isinstance(c, bool) and abs(c) <= MAX_SCROLL for c in clicks):
            raise ActionError(f"scroll_x and scroll_y must be whole numbers of wheel clicks up to {MAX_SCROLL}")
        return GuiCall("scroll", point=point, scroll=(clicks[0], clicks[1]))
    if kind == "type":
        text = action.get("text")
        if not isinstance(text, str):
            raise ActionError(f"type needs text, got {text!r}")
        return GuiCall("type", text=text)
    if kind == "wait":
        return GuiCall("wait", seconds=WAIT_S)
    if kind == "screenshot":
        return GuiCall("screenshot")
    raise ActionError(
        f"unknown action {kind!r}; the actions are: click, double_click, drag, keypress, move, screenshot, scroll, type, wait"
    )
