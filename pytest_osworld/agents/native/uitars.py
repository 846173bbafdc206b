"""The ``uitars`` runner: UI-TARS and Qwen-VL grounding models over an OpenAI-compatible chat endpoint.

The model answers in its own grammar (:mod:`uitars_grammar`): ``Thought: ...`` then ``Action: ...``.
The screenshot is sent as taken; the model's image processor resizes it by Qwen-VL's ``smart_resize``
(``--osworld-uitars-factor``, ``--osworld-uitars-min-pixels``, ``--osworld-uitars-max-pixels``: set them
as the served model's processor has them), and ``--osworld-uitars-coordinates`` says whether the model
answers in pixels of that resized image (UI-TARS-1.5, Qwen2.5-VL) or in 0..1000 of its width and height
(UI-TARS 1.0, Qwen3-VL). As OSWorld's UI-TARS agent, each request holds the prompt, the past answers with the
screenshots of the last ``history_images`` of them, and the screen now.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_osworld.agents.base import Observation, RunnerContext
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.native import prompts
from pytest_osworld.agents.native.actions import ActionError
from pytest_osworld.agents.native.images import smart_resize
from pytest_osworld.agents.native.loop import (
    INFEASIBLE,
    INFEASIBLE_PHRASE,
    CallAnswer,
    ModelTurn,
    NativeRunner,
    ToolCall,
    View,
    chat_choice,
    data_url,
    obj,
)
from pytest_osworld.agents.native.uitars_grammar import content_of, parse_call, split_answer
from pytest_osworld.models.base import ModelApi
from pytest_osworld.models.transport import JsonReply, token_count

SYSTEM = "You are a helpful assistant."


class UITarsRunner(NativeRunner):
    name: ClassVar[str] = "uitars"
    model_api: ClassVar[ModelApi] = "openai"

    def __init__(self, ctx: RunnerContext) -> None:
        super().__init__(ctx)
        self.relative = ctx.settings.model.uitars_coordinates == "relative"
        self.past: list[tuple[bytes, str]] = []  # (screenshot sent, answer) of each kept turn

    def image_size(self, screen: tuple[int, int]) -> tuple[int, int]:
        return screen  # sent as taken: the model's own processor resizes it (the frame is that size)

    def view(self, observation: Observation) -> View:
        width, height = observation.screen_size
        s = self.settings
        h_bar, w_bar = smart_resize(
            height, width, s.model.uitars_factor, s.model.uitars_min_pixels, s.model.uitars_max_pixels
        )
        # Sent as taken: the model's image processor resizes it to (w_bar, h_bar), the frame of its answers.
        frame = Frame(screen=(width, height), image=(w_bar, h_bar), relative=self.relative)
        return View(observation, observation.screenshot, frame)

    def exchange(self, view: View, answers: list[CallAnswer]) -> ModelTurn:
        notes = [f"Your last action could not be carried out: {a.text}" for a in answers if a.error]
        notes += self.news(view.observation)
        width, height = view.frame.image
        prompt = prompts.UITARS.format(
            infeasible=INFEASIBLE_PHRASE,
            call_user=prompts.UITARS_CALL_USER_ASKS if self.asks_user else prompts.UITARS_CALL_USER_V1,
            coordinates=prompts.coordinates(self.relative, width, height),
            password=self.settings.sandbox.client_password,
            instruction=self.instruction,
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": prompt}]},
        ]
        keep_from = len(self.past) - max(0, self.history_images)
        for index, (image, answer) in enumerate(self.past):
            if index >= keep_from:
                messages.append({"role": "user", "content": [_image(image)]})
            messages.append({"role": "assistant", "content": answer})
        now: list[dict[str, Any]] = [{"type": "text", "text": n} for n in notes] + [_image(view.image)]
        messages.append({"role": "user", "content": now})
        body = {"model": self.client.model, "messages": messages, **self.sampling}
        reply = self.send(self.client.completion_path(), body)
        turn, text = self._read(reply, view.frame)
        if turn.stop not in ("cut", "refusal"):
            self.past.append((view.image, text))
        return turn

    def retract(self) -> None:
        """Nothing to drop: a cut or refused answer is never added to the past."""

    def _read(self, reply: JsonReply, frame: Frame) -> tuple[ModelTurn, str]:
        data = reply.data
        message, finish, text = chat_choice(self.client, data)
        stop = (
            "cut"
            if finish == "length"
            else "refusal"
            if message.get("refusal") or finish == "content_filter"
            else "tools"
        )
        thought, calls = "", []
        if stop == "tools":
            try:
                thought, sources = split_answer(text)
                calls = [self._call(str(n), source, frame, thought) for n, source in enumerate(sources, 1)]
            except ActionError as exc:
                calls = [ToolCall(id="1", raw=text, error=str(exc))]
        usage = obj(data.get("usage"))
        turn = ModelTurn(
            calls=calls,
            text=thought,
            stop=stop,  # type: ignore[arg-type]
            stop_reason=str(finish) if finish else None,
            usage=self.usage(token_count(usage.get("prompt_tokens")), token_count(usage.get("completion_tokens"))),
            seconds=reply.seconds,
            response=self.client.redact(text),
        )
        return turn, text

    def _call(self, call_id: str, source: str, frame: Frame, thought: str) -> ToolCall:
        call = ToolCall(id=call_id, raw=source)
        try:
            step = parse_call(source, frame)
        except ActionError as exc:
            call.error = str(exc)
            return call
        if step.ending == "finished":
            call.ending = "FAIL" if INFEASIBLE.search(content_of(source)) else "DONE"
        elif step.ending == "call_user":
            # OSWorld's UI-TARS agent ends a v1 task with FAIL when the model calls the user.
            call.ending, call.question = ("CALL_USER", thought or "(no question)") if self.asks_user else ("FAIL", None)
        else:
            call.call = step.call
        return call


def _image(png: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": data_url(png)}}
