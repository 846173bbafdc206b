"""The runner interface: what an agent sees each step and what it answers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pytest_osworld.errors import OsworldError
from pytest_osworld.models.messages import Message
from pytest_osworld.record import Usage

if TYPE_CHECKING:
    from pytest_osworld.models.base import ModelClient
    from pytest_osworld.settings import Settings
    from pytest_osworld.tasks.readers import TaskEntry

# CALL_USER: the agent asks the task's simulated user a question (OSWorld-V2); the answer comes
# with the next observation's ``note``.
ActionKind = Literal["code", "WAIT", "DONE", "FAIL", "CALL_USER"]


@dataclass(frozen=True)
class Observation:
    """What the guest shows after a step."""

    instruction: str
    screenshot: bytes  # PNG
    screen_size: tuple[int, int]
    step: int  # taken after this step's actions; 0: after setup, before the first action
    accessibility_tree: str | None = None
    terminal: str | None = None
    note: str | None = None  # text from the environment for this step only: the simulated user's answer
    # The same grab scaled by the guest to the size the runner asked (``Runner.screenshot_size``): (size,
    # PNG). None when the runner asks none or the guest does not scale (the runner scales it then).
    scaled: tuple[tuple[int, int], bytes] | None = field(default=None, compare=False, repr=False)
    # Asks the guest where the pointer is now (screen pixels); read only when a runner needs it (a
    # native protocol's cursor_position). None where no guest answers (a runner's unit test).
    pointer: Callable[[], tuple[int, int]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Action:
    """One action for the guest: pyautogui ``code``, or a control word.

    ``raw`` keeps the runner's own form (a computer_13 dict, the code as the model wrote it) for the record.
    """

    kind: ActionKind
    code: str | None = None
    raw: Any = None
    question: str | None = None  # a CALL_USER action's question
    # A WAIT's own length (a native protocol's timed wait); None: the harness's wait_seconds. Either is
    # slept by the harness: waiting needs no program in the guest.
    seconds: float | None = None

    @classmethod
    def of_code(cls, code: str, raw: Any = None) -> Action:
        return cls("code", code=code, raw=raw if raw is not None else code)

    @classmethod
    def call_user(cls, question: str) -> Action:
        return cls(
            "CALL_USER",
            question=question,
            raw={"action_type": "CALL_USER", "parameters": {"question": question}},
        )

    def recorded(self) -> Any:
        """The action as ``traj.jsonl`` shows it."""
        return self.raw if self.raw is not None else (self.code if self.kind == "code" else self.kind)


@dataclass
class Decision:
    """A runner's answer to one observation."""

    actions: list[Action]
    response: str | None = None  # the model's raw text, when there is a model
    usage: Usage = field(default_factory=Usage)
    model_seconds: float | None = None
    parse_error: str | None = None  # set when the answer could not be parsed: the step is spent
    # What the step's record keeps beside the action (JSON values; a native runner's tool calls in both
    # frames, the provider's stop reason). Keys must not be StepRecord's own.
    details: dict[str, Any] = field(default_factory=dict)
    # The runner ends the episode for a reason that is not the agent's DONE or FAIL (a safety check it
    # may not acknowledge, a refusal that ends the provider's turn): the state is evaluated as it is.
    stop: str | None = None


class RunnerUnavailable(OsworldError):
    """The runner cannot play this task (e.g. the oracle and a task without a solution): the task is skipped."""


@dataclass(frozen=True)
class RunnerContext:
    """What a runner factory gets to build a runner for one task."""

    entry: TaskEntry
    settings: Settings  # already with the task's overrides
    model: ModelClient | None
    asks_user: bool = False  # the task has a simulated user to answer CALL_USER (OSWorld-V2)


class Runner(ABC):
    """An agent. One instance per episode; ``predict`` is called once per step."""

    name: ClassVar[str] = ""  # the record shows the class's name when a runner gives none
    action_space: ClassVar[Literal["pyautogui", "computer_13"]] = "pyautogui"
    needs_model: ClassVar[bool] = False
    # Read per instance: a runner may ask for the tree only under some observation settings.
    needs_accessibility_tree: bool = False
    # The request of the last ``predict`` (for --osworld-keep-model-io); empty for runners without a model.
    last_messages: list[Message] = []  # noqa: RUF012 - replaced per instance, never mutated in place

    def screenshot_size(self, screen: tuple[int, int]) -> tuple[int, int] | None:
        """The size this runner's model sees the screenshot at, when not the screen's own: the episode
        asks the guest for the screenshot at that size too (``Observation.scaled``), from the same grab."""
        return None

    @abstractmethod
    def predict(self, observation: Observation) -> Decision:
        """The next actions. Raises :class:`pytest_osworld.models.base.ModelError` when the model fails."""

    def close(self) -> None:  # noqa: B027 - optional: a subclass that holds nothing needs none
        """Release what the runner holds."""
