"""What the model-driven runners share: the prompt, a bounded history, the model call.

Each step the model gets a system prompt (the action rules and the task), the last
``history_steps`` steps (what it saw, with the screenshots of the last ``history_images`` of them,
and what it answered), then the current screen. Its answer is parsed by the runner's own action
space; an answer that cannot be used spends the step and is pointed out on the next one.
"""

from __future__ import annotations

from abc import abstractmethod
from collections import deque
from dataclasses import dataclass
from typing import Any, ClassVar

from pytest_osworld.agents import prompts
from pytest_osworld.agents.a11y import linearize
from pytest_osworld.agents.base import Action, Decision, Observation, Runner, RunnerContext
from pytest_osworld.agents.coordinates import Frame, fit_screenshot
from pytest_osworld.agents.parsing import ParseError
from pytest_osworld.errors import OsworldError
from pytest_osworld.models.base import ModelClient, ModelConfigError, Sampling
from pytest_osworld.models.messages import Image, Message, Part, Text

OBSERVATIONS = frozenset({"screenshot", "a11y_tree", "screenshot_a11y_tree"})


@dataclass(frozen=True)
class Turn:
    """One past step as the model saw and answered it."""

    step: int  # the observation's: the screen was taken after this step's actions (0: at the start)
    image: bytes | None  # the screenshot as sent (already shrunk)
    response: str
    parse_error: str | None


class PromptedRunner(Runner):
    """A runner that asks a model each step. Subclasses give the action rules and the parser."""

    needs_model: ClassVar[bool] = True
    supported_observations: ClassVar[frozenset[str]] = OBSERVATIONS
    action_rules: ClassVar[str]
    ask_user_rules: ClassVar[str] = ""  # how to ask a task's simulated user, in this action space

    def __init__(self, ctx: RunnerContext) -> None:
        if ctx.model is None:
            raise ModelConfigError(
                f"the {self.name} runner needs a model endpoint; set --osworld-model-url and --osworld-model"
            )
        settings = ctx.settings
        if settings.loop.observation not in self.supported_observations:
            raise OsworldError(
                f"the {self.name} runner does not support --osworld-observation {settings.loop.observation}; "
                f"use one of: {', '.join(sorted(self.supported_observations))}"
            )
        self.model: ModelClient = ctx.model
        self.instruction = ctx.entry.task.instruction
        self.ask_user = self.ask_user_rules if ctx.asks_user else ""
        self.observation = settings.loop.observation
        self.sends_image = settings.loop.observation != "a11y_tree"
        self.needs_accessibility_tree = settings.loop.observation in ("a11y_tree", "screenshot_a11y_tree")
        self.max_width = settings.loop.screenshot_max_width
        self.max_height = settings.loop.screenshot_max_height
        self.relative = settings.loop.relative_coordinates
        self.history_images = settings.loop.history_images
        self.a11y_max_chars = settings.loop.a11y_tree_max_chars
        self.password = settings.sandbox.client_password
        self.sampling: dict[str, Any] = Sampling.from_settings(settings).as_overrides()  # the task's own
        self.history: deque[Turn] = deque(maxlen=settings.loop.history_steps)
        self.last_messages: list[Message] = []  # the last request, for --osworld-keep-model-io

    # --- subclasses

    @abstractmethod
    def parse(self, text: str, frame: Frame) -> list[Action]:
        """The actions of an answer, in screen pixels; raises :class:`ParseError`."""

    # --- one step

    def predict(self, observation: Observation) -> Decision:
        image, frame = self._frame(observation)
        messages = self.last_messages = self.messages(observation, image, frame)
        completion = self.model.complete(messages, **self.sampling)
        try:
            actions, error = self.parse(completion.text, frame), None
        except ParseError as exc:
            actions, error = [], str(exc)
        self.history.append(Turn(observation.step, image if self.sends_image else None, completion.text, error))
        return Decision(
            actions=actions,
            response=completion.text,
            usage=completion.usage,
            model_seconds=completion.seconds,
            parse_error=error,
        )

    def _frame(self, observation: Observation) -> tuple[bytes, Frame]:
        image, size = fit_screenshot(observation.screenshot, self.max_width, self.max_height)
        screen = observation.screen_size
        return image, Frame(screen=screen, image=size or screen, relative=self.relative)

    def messages(self, observation: Observation, image: bytes, frame: Frame) -> list[Message]:
        system = prompts.system_prompt(
            self.action_rules, frame, self.observation, self.password, self.instruction, self.ask_user
        )
        messages = [Message.system(system)]
        turns = list(self.history)
        keep_images = min(self.history_images, len(turns))
        previous_error: str | None = None
        for index, turn in enumerate(turns):
            parts: list[Part] = _error_note(previous_error)
            if turn.image is not None and index >= len(turns) - keep_images:
                parts += [Text(prompts.PAST_SCREEN.format(when=prompts.when(turn.step))), Image(turn.image)]
            else:
                parts.append(Text(prompts.PAST_NO_IMAGE.format(when=prompts.when(turn.step))))
            messages.append(Message("user", tuple(parts)))
            messages.append(Message.assistant(turn.response or prompts.EMPTY_PAST_ANSWER))
            previous_error = turn.parse_error
        parts = _error_note(previous_error)
        if self.sends_image:
            parts += [Text(prompts.SCREEN), Image(image)]
        if self.needs_accessibility_tree:
            tree = observation.accessibility_tree
            table = linearize(tree, frame, self.a11y_max_chars) if tree else "(no accessibility tree available)"
            parts.append(Text(f"{prompts.TREE}\n{table}"))
        if observation.note:
            parts.append(Text(observation.note))
        parts.append(Text(prompts.STEP))
        messages.append(Message("user", tuple(parts)))
        return messages


def _error_note(error: str | None) -> list[Part]:
    return [Text(prompts.UNUSABLE.format(error=error))] if error else []
