"""The ``oracle`` runner: plays the task's reference solution, one entry per step.

Every task must score 1.0 with it: it proves the environment and the evaluator before a model is
paid for. An entry is pyautogui code, a control word (WAIT, DONE, FAIL), a computer_13 action
dict (in screen pixels), or ``{"action_type": "CALL_USER", "parameters": {"question": ...}}`` (a question
to an OSWorld-V2 task's simulated user). A solution that runs out without DONE or FAIL ends with DONE.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pytest_osworld.agents.base import Action, Decision, Observation, Runner, RunnerContext, RunnerUnavailable
from pytest_osworld.agents.computer13_runner import computer13_action
from pytest_osworld.agents.coordinates import Frame
from pytest_osworld.agents.parsing import CONTROL_WORDS, ParseError, check_python
from pytest_osworld.errors import TaskInputError


class OracleRunner(Runner):
    name: ClassVar[str] = "oracle"

    def __init__(self, ctx: RunnerContext) -> None:
        solution = ctx.entry.task.solution
        if not solution:
            raise RunnerUnavailable("task has no reference solution")
        screen = (ctx.settings.sandbox.screen_width, ctx.settings.sandbox.screen_height)
        frame = Frame(screen=screen, image=screen)
        # Every entry is checked before the first runs: a broken solution is the task's fault,
        # and finding it at step 7 would leave the guest half-changed and the failure unclear.
        self.actions = [self._action(entry, number, frame, ctx) for number, entry in enumerate(solution, 1)]
        self._next = 0

    @staticmethod
    def _action(entry: Any, number: int, frame: Frame, ctx: RunnerContext) -> Action:
        try:
            if isinstance(entry, dict) and entry.get("action_type") == "CALL_USER":
                question = (entry.get("parameters") or {}).get("question")
                if not isinstance(question, str) or not question.strip():
                    raise ParseError("a CALL_USER action needs parameters.question (the text to ask)")
                return Action.call_user(question)
            if isinstance(entry, str):
                if entry.strip() in CONTROL_WORDS:
                    return Action(entry.strip())  # type: ignore[arg-type]  # a control word is an ActionKind
                check_python(entry, f"solution step {number}")
                return Action.of_code(entry)
            return computer13_action(entry, frame)
        except ParseError as exc:
            raise TaskInputError(
                f"{ctx.entry.origin} (task {ctx.entry.id})",
                f"reference solution step {number} is not usable: {exc}",
                "fix the task's solution",
            ) from None

    def predict(self, observation: Observation) -> Decision:
        if self._next >= len(self.actions):
            return Decision(actions=[Action("DONE")])
        action = self.actions[self._next]
        self._next += 1
        return Decision(actions=[action])
