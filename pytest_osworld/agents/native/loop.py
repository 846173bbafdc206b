"""What the native runners share: one model call per step, the answers owed to its tool calls, the endings.

A step is one model call. The runner hands the model the answers it owes to the previous call's tool
calls (the screen after them, or why nothing ran), with the new screenshot, and reads the model's next
tool calls into :class:`GuiCall` s in the model's frame. Actions run in the guest as pyautogui code
(:mod:`pytest_osworld.agents.native.actions`); ``screenshot``, ``cursor_position`` and ``zoom`` run
nothing: a call made before any action of its answer is answered from the screen the model was shown,
one made after an action from the screen after it (the next observation).

How a turn ends, the same for every protocol:

- tool calls: they run in order; one that cannot be carried out (an unknown action, a bad parameter)
  runs none of them, is recorded as the step's ``parse_error`` and answered as an error;
- no tool call: the agent is done (DONE), or says the task cannot be done (FAIL) when its text says
  so (:data:`INFEASIBLE`); a protocol's own ending (UI-TARS ``finished()``) is taken as it says;
- cut off by the token limit, or refused: recorded on the step, the turn is dropped from the
  conversation and the step is spent; a protocol whose refusal ends its turn ends the episode;
- a provider's stop the runner may not pass (a safety check without permission): the episode ends
  (``Decision.stop``) and the state is evaluated as it is.
"""

from __future__ import annotations

import base64
import json
import re
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from pytest_osworld.agents.base import Action, Decision, Observation, Runner, RunnerContext
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native.actions import ActionError, GuiCall, screen_points, to_code
from pytest_osworld.agents.native.images import fit_size, zoom_png
from pytest_osworld.errors import OsworldError
from pytest_osworld.models.base import ModelApi, ModelConfigError, ModelError, Sampling
from pytest_osworld.models.messages import Image, Message, Part, Text
from pytest_osworld.models.transport import HttpModelClient, JsonReply
from pytest_osworld.record import Usage

# OSWorld's own computer-use agents take these words in a final message as "the task is infeasible".
INFEASIBLE = re.compile(r"\b(infeasible|unfeasible|not feasible|impossible|cannot be done)\b", re.IGNORECASE)
INFEASIBLE_PHRASE = "the task is infeasible"  # what the prompts ask a model to write
DONE_TEXT = "Done."
_DATA_URL = re.compile(r"^data:image/[a-z]+;base64,")


@dataclass
class ToolCall:
    """One call of a model turn: the protocol's id, the model's own form, and what it means."""

    id: str
    raw: Any  # the model's call as it wrote it (recorded)
    call: GuiCall | None = None
    error: str | None = None  # why it cannot be carried out
    # A protocol's own final action (UI-TARS ``finished()``, the computer function's ``terminate``):
    # the actions before it run, then the episode ends with it.
    ending: Literal["DONE", "FAIL", "CALL_USER"] | None = None
    question: str | None = None  # CALL_USER's question


@dataclass
class ModelTurn:
    """One model answer, read by a protocol."""

    calls: list[ToolCall]
    text: str  # the model's words (thoughts, a final message)
    stop: Literal["tools", "end", "cut", "refusal"]
    stop_reason: str | None  # the provider's own word for how the answer ended
    usage: Usage
    seconds: float
    response: str  # the answer as the step's record shows it
    halt: str | None = None  # the episode must end here: why (Decision.stop)


@dataclass
class CallAnswer:
    """What the model is told about one of its calls."""

    call: ToolCall
    text: str
    image: bytes | None = None
    error: bool = False


@dataclass(frozen=True)
class View:
    """One observation as the model sees it."""

    observation: Observation
    image: bytes  # the screenshot as sent
    frame: Frame


@dataclass
class _Owed:
    call: ToolCall
    answer: CallAnswer | None = None  # None: answered from the next view (the screen after the step)


class NativeRunner(Runner):
    """A runner that speaks a provider's own computer-use protocol. Subclasses give the wire format."""

    needs_model: ClassVar[bool] = True
    model_api: ClassVar[ModelApi]
    supported_observations: ClassVar[frozenset[str]] = frozenset({"screenshot"})
    refusal_ends: ClassVar[bool] = False  # a refusal ends the provider's turn for good (OpenAI's)

    def __init__(self, ctx: RunnerContext) -> None:
        model = ctx.model
        if not isinstance(model, HttpModelClient):
            raise ModelConfigError(
                f"the {self.name} runner needs a model endpoint; set --osworld-model-url and --osworld-model"
            )
        if model.api != self.model_api:
            raise ModelConfigError(f"the {self.name} runner speaks the {self.model_api} API, not {model.api}")
        settings = ctx.settings
        if settings.loop.observation not in self.supported_observations:
            raise OsworldError(
                f"the {self.name} runner does not support --osworld-observation {settings.loop.observation}; "
                f"use one of: {', '.join(sorted(self.supported_observations))}"
            )
        self.client = model
        self.settings = settings
        self.instruction = ctx.entry.task.instruction
        self.asks_user = ctx.asks_user
        self.sampling = Sampling.from_settings(settings).as_overrides()
        self.history_images = settings.loop.history_images
        self.last_messages: list[Message] = []
        self._owed: list[_Owed] = []  # answers owed to the last turn's calls
        self._sent: list[_Owed] = []  # what the last exchange answered (restored when its turn is dropped)

    # --- the protocol ----------------------------------------------------------------------------

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        """The size of the screenshot this protocol's model gets: the screen's, or within
        ``--osworld-screenshot-max-*``."""
        return fit_size(*screen, self.settings.loop.screenshot_max_width, self.settings.loop.screenshot_max_height)

    def screenshot_size(self, screen: tuple[int, int]) -> tuple[int, int] | None:
        size = self.image_size(screen)
        return None if size == screen else size

    @abstractmethod
    def view(self, observation: Observation) -> View:
        """The screenshot as this protocol's model sees it, and the frame its coordinates are in."""

    @abstractmethod
    def exchange(self, view: View, answers: list[CallAnswer]) -> ModelTurn:
        """Tell the model ``answers`` (for the last turn's calls, in order) and the screen of ``view``;
        send the request and read the answer into a turn (added to the conversation)."""

    @abstractmethod
    def retract(self) -> None:
        """Drop the last exchange (its request's new part and the answer) from the conversation."""

    # --- one step --------------------------------------------------------------------------------

    def predict(self, observation: Observation) -> Decision:
        view = self.view(observation)
        self._sent = list(self._owed)
        answers = [owed.answer or self._after(owed.call, view) for owed in self._owed]
        self._mark_last_screen(answers, view)
        self._owed = []
        turn = self.exchange(view, answers)
        return self._decide(turn, view)

    def news(self, observation: Observation) -> list[str]:
        """Texts the model is told with this observation: a changed instruction (an OSWorld-V2 phase)
        and the environment's note (the simulated user's answer)."""
        texts = []
        if observation.instruction != self.instruction:
            self.instruction = observation.instruction
            texts.append(f"The task now: {observation.instruction}")
        if observation.note:
            texts.append(observation.note)
        return texts

    def send(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> JsonReply:
        """Send one request of the protocol (the client's retries, masks and redaction apply)."""
        if self.settings.reports.keep_model_io:
            self.last_messages = model_io_messages(body)
        return self.client.send_json(path, body, headers=headers)

    def usage(self, prompt_tokens: int, completion_tokens: int) -> Usage:
        return self.client.prices.usage(prompt_tokens, completion_tokens)

    def _decide(self, turn: ModelTurn, view: View) -> Decision:
        details: dict[str, Any] = {"stop_reason": turn.stop_reason}
        if turn.calls:
            details["tool_calls"] = [self._call_record(c, view.frame) for c in turn.calls]
        said: dict[str, Any] = {
            "response": turn.response,
            "usage": turn.usage,
            "model_seconds": turn.seconds,
            "details": details,
        }
        if turn.halt is not None:
            return Decision([], stop=turn.halt, **said)
        if turn.stop in ("cut", "refusal"):
            why = (
                f"the answer was cut off at the token limit (stop reason {turn.stop_reason}); raise --osworld-max-tokens"
                if turn.stop == "cut"
                else f"the model refused to answer (stop reason {turn.stop_reason})"
                + (f": {self.client.redact(turn.text)}" if turn.text else "")
            )
            if turn.stop == "refusal" and self.refusal_ends:
                return Decision([], stop=why, **said)
            self.retract()
            self._owed = self._sent  # answered again, with the next screen, in the next request
            return Decision([], parse_error=f"{why}; the turn was dropped", **said)
        if not turn.calls:
            return Decision([Action("FAIL") if INFEASIBLE.search(turn.text) else Action("DONE")], **said)
        errors = [(n, c) for n, c in enumerate(turn.calls, 1) if c.error is not None]
        if errors:
            self._owed = [_Owed(c, self._refused(c, errors[0][0])) for c in turn.calls]
            problem = "; ".join(f"action {n}: {c.error}" if len(turn.calls) > 1 else str(c.error) for n, c in errors)
            return Decision([], parse_error=self.client.redact(problem), **said)
        return Decision(self._actions(turn, view), **said)

    def _actions(self, turn: ModelTurn, view: View) -> list[Action]:
        actions: list[Action] = []
        for tool_call in turn.calls:
            if tool_call.ending is not None:
                end = tool_call.ending
                actions.append(Action.call_user(tool_call.question or turn.text) if end == "CALL_USER" else Action(end))
                if end != "CALL_USER":
                    break  # the episode ends here: later calls are not run
                self._owed.append(_Owed(tool_call, CallAnswer(tool_call, "Asked.")))
                continue
            call = tool_call.call
            assert call is not None
            if call.informs:
                # Before any action of this answer: the screen the model saw; after one: the next screen.
                self._owed.append(_Owed(tool_call, None if actions else self._inform(tool_call, view)))
                continue
            record = self._call_record(tool_call, view.frame)
            code = to_code(call, view.frame)
            wait = Action("WAIT", raw=record, seconds=call.seconds)  # a wait runs on the host, not in the guest
            actions.append(Action.of_code(code, raw=record) if code is not None else wait)
            self._owed.append(_Owed(tool_call))
        return actions

    def _after(self, tool_call: ToolCall, view: View) -> CallAnswer:
        """An answer from the screen after the last step (``view``)."""
        if tool_call.call is not None and tool_call.call.informs:
            return self._inform(tool_call, view)
        return CallAnswer(tool_call, DONE_TEXT)

    @staticmethod
    def _mark_last_screen(answers: list[CallAnswer], view: View) -> None:
        """The last action's answer carries the screen after the step (the others say it ran)."""
        for answer in reversed(answers):
            call = answer.call.call
            if call is not None and not call.informs and not answer.error:
                answer.image = view.image
                return

    def _inform(self, tool_call: ToolCall, view: View) -> CallAnswer:
        call = tool_call.call
        assert call is not None
        try:
            if call.kind == "screenshot":
                return CallAnswer(tool_call, "The screen now.", view.image)
            if call.kind == "cursor_position":
                pointer = view.observation.pointer
                if pointer is None:
                    raise ActionError("the pointer position cannot be read here")
                x, y = view.frame.to_model(*pointer())
                return CallAnswer(tool_call, f"X={x},Y={y}")
            assert call.region is not None
            box = _screen_box(call.region, view.frame)
            image = zoom_png(view.observation.screenshot, box, view.frame.image)
            return CallAnswer(tool_call, f"The region {[round(v) for v in call.region]} of the screen, closer.", image)
        except ActionError as exc:
            return CallAnswer(tool_call, str(exc), error=True)

    @staticmethod
    def _refused(tool_call: ToolCall, first_bad: int) -> CallAnswer:
        if tool_call.error is not None:
            return CallAnswer(tool_call, f"Not carried out: {tool_call.error}.", error=True)
        return CallAnswer(tool_call, f"Not carried out: action {first_bad} of the same answer was invalid.", error=True)

    def _call_record(self, tool_call: ToolCall, frame: Frame) -> dict[str, Any]:
        record: dict[str, Any] = {"id": tool_call.id, "call": self._redacted(tool_call.raw)}
        if tool_call.call is not None:
            points = screen_points(tool_call.call, frame)
            if points:
                record["screen"] = points
        if tool_call.error is not None:
            record["error"] = self.client.redact(tool_call.error)
        return record

    def _redacted(self, value: Any) -> Any:
        """A model's call for the record: every string with the client's credentials masked."""
        if isinstance(value, str):
            return self.client.redact(value)
        if isinstance(value, dict):
            return {k: self._redacted(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._redacted(v) for v in value]
        return value


def _screen_box(region: tuple[float, float, float, float], frame: Frame) -> tuple[int, int, int, int]:
    """A region of the model's frame as screen pixels (right and bottom excluded), kept on the screen."""
    width, height = frame.screen
    left, top = frame.offset_to_screen(region[0], region[1])
    right, bottom = frame.offset_to_screen(region[2], region[3])
    return max(0, left), max(0, top), min(width, right), min(height, bottom)


def model_io_messages(body: dict[str, Any]) -> list[Message]:
    """A native request for ``--osworld-keep-model-io``: one message per conversation entry, its JSON
    (images left out) and its images by size. Entries are the body's ``messages`` or ``input``; the
    rest of the body (tools, system prompt) is the first message."""
    key = "messages" if isinstance(body.get("messages"), list) else "input"
    entries = body.get(key) if isinstance(body.get(key), list) else []
    rest = {k: v for k, v in body.items() if k != key}
    messages = [Message("system", (Text(json.dumps(rest, ensure_ascii=False)),))]
    for entry in entries or []:
        images: list[bytes] = []
        text = json.dumps(_without_images(entry, images), ensure_ascii=False)
        role = entry.get("role") if isinstance(entry, dict) else None
        parts: list[Part] = [Text(text), *(Image(i) for i in images)]
        messages.append(Message(role if role in ("system", "assistant") else "user", tuple(parts)))
    return messages


def _without_images(value: Any, found: list[bytes]) -> Any:
    if isinstance(value, dict):
        if value.get("type") == "base64" and isinstance(value.get("data"), str):
            found.append(base64.b64decode(value["data"]))
            return {**value, "data": f"<image {len(found)}>"}
        return {k: _without_images(v, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_images(v, found) for v in value]
    if isinstance(value, str) and _DATA_URL.match(value):
        found.append(base64.b64decode(value.split(",", 1)[1]))
        return f"<image {len(found)}>"
    return value


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field a provider left out or mangled)."""
    return value if isinstance(value, dict) else {}


def items_of(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def chat_choice(client: HttpModelClient, data: dict[str, Any]) -> tuple[dict[str, Any], Any, str]:
    """A chat completion's first choice: its message, its ``finish_reason`` and its text content."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ModelError(client.redact(f"the model endpoint's answer has no choices: {json.dumps(data)[:300]}"))
    message = obj(choices[0].get("message"))
    content = message.get("content")
    return message, choices[0].get("finish_reason"), content if isinstance(content, str) else ""


def data_url(png: bytes) -> str:
    return f"data:image/png;base64,{base64.b64encode(png).decode('ascii')}"


@dataclass
class Conversation:
    """A list of protocol messages with the index where the last exchange began (for ``retract``)."""

    items: list[Any] = field(default_factory=list)
    mark: int = 0

    def begin(self) -> None:
        self.mark = len(self.items)

    def drop_last_exchange(self) -> None:
        del self.items[self.mark :]
