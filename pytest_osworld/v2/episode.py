"""One OSWorld-V2 episode: the v1 episode's sandbox, agent loop, recording and masks, with the task's
own ``setup(setup_controller)`` and ``evaluate(env)``, its simulated user, its judge scope and, for a
``MultiPhaseTask``, its phases.

Masks beyond v1's: a judge call of the task that failed or answered nothing (``judge_error``, whatever
the task did with the exception), a simulated user that failed (``user_sim_error``), a ``setup()`` that
raised (``setup_error``), an ``evaluate()`` that raised (``evaluator_error``).
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_osworld.agents.base import Action, Decision
from pytest_osworld.episode import Episode, Masked, _Loop
from pytest_osworld.guest.client import GuestError
from pytest_osworld.record import StepRecord, Termination
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.v2.api.env import TaskEnv
from pytest_osworld.v2.api.loader import ApiMode
from pytest_osworld.v2.api.setup_controller import SetupController
from pytest_osworld.v2.api.state import TaskRuntime, active
from pytest_osworld.v2.llm.settings import JudgeError, JudgeSettings
from pytest_osworld.v2.llm.user_sim import UserSimError, UserSimSpecError, UserSimulator, make_user_simulator

if TYPE_CHECKING:
    from pytest_osworld.v2.llm.judge import Judge

DEFAULT_GATE_MIN_SCORE = 1.0
MAX_EVALUATION_CHARS = 20_000  # of a dict evaluate() returned, as JSON, in the record


def score_of(value: Any) -> tuple[float, dict[str, Any] | None]:
    """The score of what ``evaluate()`` returned, as upstream takes it: a number, or a dict's numeric
    ``score``; anything else (no ``score``, a non-number, NaN) is 0.0. The dict is kept for the record."""
    payload = value if isinstance(value, dict) else None
    raw = payload.get("score") if payload is not None else value
    if isinstance(raw, numbers.Real):  # numpy's numbers too, as upstream's float() takes them
        score = float(raw)
        return (0.0 if math.isnan(score) else score), payload
    return 0.0, payload


def json_safe(payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` as JSON can hold it (what is not JSON becomes its text), bounded in size."""
    text = json.dumps(payload, default=str)
    if len(text) > MAX_EVALUATION_CHARS:
        return {"score": payload.get("score"), "truncated": text[:MAX_EVALUATION_CHARS]}
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@dataclass(frozen=True)
class Phase:
    """One phase of a ``MultiPhaseTask`` (the task itself is one phase of its instruction)."""

    instruction: str
    gate: bool = False
    gate_min_score: float = DEFAULT_GATE_MIN_SCORE
    evaluate: Callable[[Any], Any] | None = None
    setup: Callable[[Any], Any] | None = None

    @classmethod
    def from_dict(cls, raw: Any, number: int, task_id: str) -> Phase:
        if not isinstance(raw, dict) or not isinstance(raw.get("instruction"), str):
            raise ValueError(f"task {task_id}: get_phases()[{number - 1}] is not a dict with an instruction")
        minimum = raw.get("gate_min_score", DEFAULT_GATE_MIN_SCORE)
        return cls(
            instruction=raw["instruction"],
            gate=bool(raw.get("gate")) or "gate_min_score" in raw,
            gate_min_score=float(minimum),
            evaluate=raw.get("evaluate") if callable(raw.get("evaluate")) else None,
            setup=raw.get("setup") if callable(raw.get("setup")) else None,
        )


class V2Episode(Episode):
    """An episode of one V2 task instance. ``configure`` before ``run``."""

    task: Any
    mode: ApiMode
    runtime: TaskRuntime
    judge: Judge | None
    judge_settings: JudgeSettings
    phases: list[Phase] | None
    env: TaskEnv | None = None
    user: UserSimulator | None = None
    enable_proxy: bool = False

    def configure(
        self,
        *,
        task: Any,
        mode: ApiMode,
        runtime: TaskRuntime,
        judge: Judge | None,
        phases: list[Phase] | None,
        enable_proxy: bool = False,
    ) -> None:
        self.task = task
        self.mode = mode
        self.runtime = runtime
        self.judge = judge
        self.judge_settings = judge.settings if judge is not None else JudgeSettings()
        self.phases = phases
        self.enable_proxy = enable_proxy
        self.instruction = phases[0].instruction if phases else str(task["instruction"])
        runtime.cache_dir = self.context.cache_dir
        runtime.context = self.context

    # --- the whole episode, in the task's runtime and judge scope

    def run(self) -> Any:
        with active(self.runtime), self._judge_scope():
            return super().run()

    @contextmanager
    def _judge_scope(self) -> Iterator[None]:
        if self.judge is None:
            yield
            return
        with self.judge.for_task(self.entry.id) as scope:
            self.runtime.judge = scope
            yield

    # --- setup: the task's own

    def _run_config(self) -> None:
        controller = SetupController(self.context)
        self.user = self._make_user()
        self.env = TaskEnv(
            context=self.context,
            setup_controller=controller,
            task_id=self.entry.id,
            user_simulator=self.user,
            enable_proxy=self.enable_proxy,
        )
        self.runtime.env = self.env
        self._call_task("setup()", Termination.SETUP_ERROR, lambda: self.task.setup(controller))

    def _make_user(self) -> UserSimulator | None:
        spec = self.task.get("user_simulator")
        if spec is None:
            return None
        try:
            return make_user_simulator(
                spec,
                self.judge_settings,
                task_id=self.entry.id,
                instruction=str(self.task.get("instruction") or ""),
                clients=self.judge.clients if self.judge is not None else None,
            )
        except UserSimSpecError as exc:
            raise Masked(Termination.SETUP_ERROR, str(exc)) from None
        except UserSimError as exc:
            raise Masked(Termination.USER_SIM_ERROR, str(exc)) from None

    def _call_task(self, what: str, termination: Termination, call: Callable[[], Any]) -> Any:
        """Run the task's own code with its API in place; what it raises masks the task."""
        try:
            with self.mode.api():
                return call()
        except (SetupError, GuestError, Masked):
            raise  # the episode's own handling: the step's mask, a lost sandbox
        except UserSimError as exc:
            raise Masked(Termination.USER_SIM_ERROR, str(exc)) from None
        except JudgeError as exc:
            raise Masked(Termination.JUDGE_ERROR, str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - the task's code: any error is the task's, named
            raise Masked(termination, f"task {self.entry.id}: {what} raised {type(exc).__name__}: {exc}") from None

    # --- the agent loop: the simulated user, the action history, the phases

    def _call_user(self, action: Action) -> tuple[str, str]:
        question = action.question or ""
        if self.user is None:
            return super()._call_user(action)
        try:
            return question, self.user.respond(question)
        except UserSimError as exc:
            raise Masked(Termination.USER_SIM_ERROR, str(exc)) from None

    def _act(self, step: int, decision: Decision, loop: _Loop) -> tuple[list[StepRecord], bool]:
        records, ended = super()._act(step, decision, loop)
        if self.env is not None:
            self.env.action_history.extend(r.action for r in records if r.action is not None)
        return records, ended

    def _agent_loop(self) -> _Loop:
        if not self.phases:
            return super()._agent_loop()
        total = _Loop()
        results: list[dict[str, Any]] = []
        agent_seconds = 0.0
        safe = bool(self.task.get("intermediate_eval_safe", True))
        for number, phase in enumerate(self.phases, 1):
            self.instruction = phase.instruction
            if number > 1:
                self._note = f"Next part of the task ({number} of {len(self.phases)}): {phase.instruction}"
            if phase.setup is not None:
                self._phase_setup(phase.setup, number)
            loop = super()._agent_loop()
            agent_seconds += self.durations.agent or 0.0
            self._step_base += loop.steps
            total.steps += loop.steps
            total.usage = total.usage.add(loop.usage)
            total.termination, total.last_action, total.last_screen = (
                loop.termination,
                loop.last_action,
                loop.last_screen,
            )
            record: dict[str, Any] = {
                "phase": number,
                "instruction": phase.instruction,
                "steps": loop.steps,
                "termination": loop.termination.value,
                "score": None,
            }
            results.append(record)
            self.result.phase_results = results
            stop = loop.termination is Termination.FAIL
            if phase.gate and number < len(self.phases):
                if safe:
                    score = self._phase_score(phase, number)
                    record["score"] = score
                    if score < phase.gate_min_score:
                        record["gate"] = f"stopped: score {score:g} < {phase.gate_min_score:g}"
                        stop = True
                    else:
                        record["gate"] = "passed"
                else:
                    record["gate"] = "not checked: the task's intermediate_eval_safe is False"
            if stop:
                break
        self.durations.agent = round(agent_seconds, 3)
        return total

    def _phase_setup(self, setup: Callable[[Any], Any], number: int) -> None:
        self._call_task(
            f"phase {number} setup",
            Termination.SETUP_ERROR,
            lambda: setup(self.env.setup_controller if self.env else None),
        )

    def _phase_score(self, phase: Phase, number: int) -> float:
        evaluate = phase.evaluate or self.task.evaluate
        value = self._call_task(f"phase {number} evaluation", Termination.EVALUATOR_ERROR, lambda: evaluate(self.env))
        return score_of(value)[0]

    # --- evaluation: the task's own

    def _evaluate(self, last_action: str | None) -> None:
        with self._phase("evaluation"):
            value = self._call_task("evaluate(env)", Termination.EVALUATOR_ERROR, lambda: self.task.evaluate(self.env))
        score, payload = score_of(value)
        self.result.score = score
        self.result.evaluation = json_safe(payload) if payload is not None else None
        numeric = payload.get("score") if payload is not None else value
        how = "" if isinstance(numeric, numbers.Real) else " (evaluate() gave no numeric score: 0.0, as upstream)"
        self.result.message = (
            f"{_ending(self.result.termination, self.result.steps)}; evaluate(env) scored {score:g}{how}"
        )

    # --- the end: the judge's and the user's calls decide a mask before the record is written

    def _finish(self, started: float) -> None:
        result = self.result
        scope = self.runtime.judge
        if scope is not None:
            result.judge = scope.record()
        if self.user is not None:
            result.user_sim = self.user.record()
        problem = self._model_problem()
        # A failed judge or user decides over the score, and over an evaluate() that raised because of it.
        overridable = not result.masked or result.termination is Termination.EVALUATOR_ERROR
        if problem is not None and result.termination is not Termination.INTERRUPTED and overridable:
            result.termination, result.message = problem
            result.score, result.metric_scores = None, []
        super()._finish(started)

    def _model_problem(self) -> tuple[Termination, str] | None:
        scope = self.runtime.judge
        error = scope.error() if scope is not None else None
        if error is None and self.runtime.judge_problems:
            error = self.runtime.judge_problems[0]
        if error is not None:
            return Termination.JUDGE_ERROR, error
        user_error = self.user.error() if self.user is not None else None
        if user_error is not None:
            return Termination.USER_SIM_ERROR, user_error
        return None


def _ending(termination: Termination, steps: int) -> str:
    return {
        Termination.DONE: f"the agent said DONE after {steps} step(s)",
        Termination.FAIL: f"the agent said FAIL after {steps} step(s)",
        Termination.MAX_STEPS: f"the step budget ran out after {steps} step(s)",
        Termination.TIMEOUT: f"the episode's time limit ran out after {steps} step(s)",
    }.get(termination, termination.value)
