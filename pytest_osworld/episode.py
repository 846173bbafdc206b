"""One episode: setup -> settle -> observe -> runner -> execute ... -> settle -> evaluate -> a record.

The episode never turns an infrastructure fault into a score: a lost sandbox, a failing setup step,
a model past its retries or a crashing evaluator end the episode *masked*, with the reason. What an
action does in the guest (it raises, exits non-zero, hangs past ``action_timeout``) is the agent's
business: the step records it and the loop goes on.

As OSWorld's loop: the first observation is taken after setup and a wait for what it launched
(``start_settle``), each step's screenshot (and the next observation) after its actions; pyautogui
code gets upstream's ``<`` rewrite before it is sent; the evaluation waits for the guest to settle
first (``eval_settle``).

An action may kill the desktop's own processes (``pkill python3``, ``kill -9 -1``): the guest's
supervisor starts them again, the action's step records its failure, and the episode goes on with
what is left, as on OSWorld's VM. The record lists the restarts the guest reports (``restarts``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote

from pytest_osworld.agents.base import Action, Decision, Observation, Runner
from pytest_osworld.agents.less_than import fix_less_than
from pytest_osworld.errors import EvaluatorError, EvaluatorUnavailable
from pytest_osworld.evaluation.evaluate import evaluate
from pytest_osworld.guest.client import GuestError, GuestUnreachable
from pytest_osworld.live.observer import NO_OBSERVER, EpisodeObserver
from pytest_osworld.models.base import ModelError
from pytest_osworld.models.messages import Message, Text
from pytest_osworld.record import (
    Durations,
    LoopRecord,
    RestartRecord,
    StepRecord,
    TaskResult,
    Termination,
    Usage,
)
from pytest_osworld.settle import START_QUIET_LIMIT_S, wait_fixed, wait_quiet, watched_files
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.setup.steps import run_setup

if TYPE_CHECKING:
    from pytest_osworld.results.recorder import EpisodeRecorder
    from pytest_osworld.sandbox.base import Sandbox
    from pytest_osworld.settings import Settings
    from pytest_osworld.tasks.readers import TaskEntry

ACCESSIBILITY_OBSERVATIONS = frozenset({"a11y_tree", "screenshot_a11y_tree", "som"})
# Run in the guest: GET argv[1] directly (never through a proxy of the guest's environment), print the status.
_REGISTER = (
    "import sys, urllib.error, urllib.request\n"
    "opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))\n"
    "try:\n    print(opener.open(sys.argv[1], timeout=10).status)\n"
    "except urllib.error.HTTPError as exc:\n    print(exc.code)\n"
)
MAX_ERROR_CHARS = 2000  # of an action's stderr in its step record


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Masked(Exception):
    """Internal: leave the episode without a valid score (a mask, or a need found only at evaluation)."""

    def __init__(self, termination: Termination, message: str) -> None:
        super().__init__(message)
        self.termination = termination


Masked = _Masked  # for episodes built on this one (the OSWorld-V2 episode)


class _ScoreZero(Exception):
    """Internal: a setup step declared ``on_nonzero: score_zero`` failed: a valid zero."""


@dataclass
class _Loop:
    """What the agent loop leaves behind for evaluation and the record."""

    termination: Termination = Termination.MAX_STEPS
    last_action: str | None = None  # the last control word, when the agent ended with one
    steps: int = 0
    usage: Usage = field(default_factory=Usage)
    last_screen: bytes | None = None  # the screen after the last step: the final screenshot


class Episode:
    """Runs one task on one sandbox with one runner, writing everything through the recorder."""

    def __init__(
        self,
        *,
        entry: TaskEntry,
        settings: Settings,
        result: TaskResult,
        sandbox: Sandbox,
        runner: Runner,
        recorder: EpisodeRecorder,
        context: TaskContext,
    ) -> None:
        self.entry = entry
        self.settings = settings
        self.sandbox = sandbox
        self.runner = runner
        self.recorder = recorder
        self.context = context
        self.guest = context.guest
        # A wait for a restarting guest server ends at once when the sandbox itself has stopped.
        self.guest.sandbox_alive = sandbox.alive
        self.result = result
        self.durations = Durations(sandbox_ready=sandbox.ready_seconds)
        self.screen_size = (settings.sandbox.screen_width, settings.sandbox.screen_height)
        # What the agent is asked (an OSWorld-V2 phase changes it), and text for its next observation
        # only (the simulated user's answer).
        self.instruction = entry.task.instruction
        self._note: str | None = None
        self._step_base = 0  # steps of earlier agent loops of this episode (OSWorld-V2 phases)
        self._stop: str | None = None  # why the runner ended the episode, when it did (Decision.stop)
        # Asked once the episode has ended, before its score stands: why a shared service the task
        # used is down now (it died during the task), or None. Set by whoever holds the services.
        self.service_check: Callable[[], str | None] | None = None
        # Told of the phases and steps as they happen (the live page), and asked at the end whether a
        # person sent input to the desktop meanwhile. Does nothing unless the plugin attaches one.
        self.observer: EpisodeObserver = NO_OBSERVER

    @classmethod
    def build(
        cls,
        *,
        entry: TaskEntry,
        settings: Settings,
        run_id: str,
        repeat: int,
        sandbox: Sandbox,
        runner: Runner,
        recorder: EpisodeRecorder,
        model: dict[str, Any] | None,
        markers: list[str],
        worker: str | None,
        cache_dir: Path,
    ) -> Self:
        result = TaskResult(
            run_id=run_id,
            task_id=entry.id,
            domain=entry.domain,
            repeat=repeat,
            termination=Termination.INTERRUPTED,
            runner=runner.name or type(runner).__name__,
            action_space=runner.action_space,
            model=model or {},
            related_apps=list(entry.task.related_apps),
            markers=markers,
            worker=worker,
            sandbox=sandbox.describe(),
            loop=LoopRecord.model_validate(settings.loop_record()),
        )
        origin = Path(entry.origin.rpartition(":")[0] or entry.origin)
        context = TaskContext.for_sandbox(
            sandbox, settings, cache_dir=cache_dir, report_dir=recorder.task_dir, source_dir=origin.parent
        )
        return cls(
            entry=entry,
            settings=settings,
            result=result,
            sandbox=sandbox,
            runner=runner,
            recorder=recorder,
            context=context,
        )

    # --- phases -------------------------------------------------------------------------------

    @contextmanager
    def _phase(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            setattr(self.durations, name, round(time.monotonic() - start, 3))

    def _mask(self, termination: Termination, exc: BaseException) -> _Masked:
        """The mask for an exception met in a phase: a dead or silent guest is always ``sandbox_lost``."""
        if isinstance(exc, GuestUnreachable) or not self.sandbox.alive():
            return _Masked(Termination.SANDBOX_LOST, str(self.sandbox.lost(str(exc))))
        return _Masked(termination, str(exc))

    def _setup(self) -> None:
        self.observer.phase("setup")
        with self._phase("setup"):
            try:
                self.guest.wait_ready(time.monotonic() + self.settings.loop.guest_ready_timeout)
                size = self.guest.screen_size()
                self.screen_size = (int(size["width"]), int(size["height"]))
                self._register_with_proxy()
                self._run_config()
            except SetupError as exc:
                if exc.score_zero:
                    raise _ScoreZero(str(exc)) from None
                raise self._mask(Termination.SETUP_ERROR, exc) from None
            except GuestError as exc:
                raise self._mask(Termination.SETUP_ERROR, exc) from None
        if self.settings.reports.keep_video:
            self.guest.start_recording()

    def _run_config(self) -> None:
        """The task's own setup: its ``config`` steps."""
        run_setup(self.context, self.entry.task.config)

    def _register_with_proxy(self) -> None:
        """A task that holds the ``proxy`` service registers its sandbox first, from inside it: the proxy
        records what the sandbox's address reaches under the task's key from then on, whoever had the
        address before (docs/services.md). A proxy that answers 404 records nothing (one of the profile's)."""
        proxy = self.context.services.get("proxy")
        if proxy is None:
            return
        url = f"{proxy.guest_url()}/api/register?cookie={quote(proxy.state_key or 'default', safe='')}"
        result = self.guest.execute(["python3", "-c", _REGISTER, url])
        status = result.output.strip()
        if result.returncode != 0 or status not in ("200", "404"):
            why = f"it answered {status}" if status else (result.error.strip().splitlines() or ["no answer"])[-1]
            raise _Masked(
                Termination.SERVICE_ERROR,
                f"service proxy: the sandbox could not register with it at {proxy.guest_url()}: {why}",
            )

    def _observe(self, step: int) -> Observation:
        wants_tree = (
            self.runner.needs_accessibility_tree or self.settings.loop.observation in ACCESSIBILITY_OBSERVATIONS
        )
        note, self._note = self._note, None
        # A runner whose model sees a smaller screen gets it scaled by the guest, from the same grab:
        # the scaling's CPU is the sandbox's, not the one machine's that runs every episode.
        size = self.runner.screenshot_size(self.screen_size)
        screenshot, scaled = self.guest.screenshots(size) if size else (self.guest.screenshot(), None)
        return Observation(
            instruction=self.instruction,
            note=note,
            screenshot=screenshot,
            scaled=(size, scaled) if size and scaled is not None else None,
            screen_size=self.screen_size,
            step=step,
            accessibility_tree=self.guest.accessibility() if wants_tree else None,
            pointer=self.guest.cursor_position,  # read only if the runner asks (cursor_position)
        )

    def _code(self, action: Action) -> str:
        """The code the guest runs: upstream rewrites ``<`` in every action of the pyautogui space."""
        assert action.code is not None
        # A computer_13 action (a dict) becomes code too, but upstream sends those unrewritten.
        if self.runner.action_space == "pyautogui" and not isinstance(action.raw, dict):
            return fix_less_than(action.code)
        return action.code

    def _execute(self, action: Action) -> dict[str, Any]:
        """Run one code action; what it did goes to its step record, never into a mask.

        Only a guest that is gone raises (:class:`GuestUnreachable`); the action is never sent twice.
        """
        answer = self.guest.run_action(self._code(action), self.settings.loop.action_timeout)
        if self.settings.loop.action_pause:
            time.sleep(self.settings.loop.action_pause)  # the UI's reaction time, as upstream's pause after an action
        status = "timeout" if answer.timed_out else ("ok" if answer.returncode == 0 else "error")
        return {
            "execute_status": status,
            "execute_error": answer.error[-MAX_ERROR_CHARS:] if status != "ok" else None,
            # Only an exit status the action itself gave (not the guest's refusal or a time-out).
            "returncode": answer.returncode if answer.status == "success" else None,
        }

    def _step_record(
        self, step: int, decision: Decision, action: Action | None, *, first: bool, **fields: Any
    ) -> StepRecord:
        """One ``traj.jsonl`` line per action; the model's answer and usage go with the first."""
        return StepRecord(
            step_num=step,
            action_timestamp=datetime.now().strftime("%Y%m%d@%H%M%S%f"),
            action=action.recorded() if action else None,
            response=decision.response if first else None,
            parse_error=decision.parse_error if first else None,
            model_seconds=decision.model_seconds if first else None,
            usage=decision.usage if first else Usage(),
            **(decision.details if first else {}),
            **fields,
        )

    def _act(self, step: int, decision: Decision, loop: _Loop) -> tuple[list[StepRecord], bool]:
        """Carry out a decision's actions; returns their records and whether the agent ended the episode."""
        records: list[StepRecord] = []
        if decision.stop is not None:
            # The runner ends the episode for the provider's reason (not the agent's DONE or FAIL): the
            # state is evaluated as it is, and the record and the message say why it ended.
            loop.last_action, loop.termination, self._stop = None, Termination.DONE, decision.stop
            records.append(self._step_record(step, decision, None, first=True, done=True, stop=decision.stop))
            return records, True
        for action in decision.actions:
            first = not records
            if action.kind in ("DONE", "FAIL"):
                loop.last_action = action.kind
                loop.termination = Termination.DONE if action.kind == "DONE" else Termination.FAIL
                records.append(self._step_record(step, decision, action, first=first, done=True))
                return records, True
            started = time.monotonic()
            if action.kind == "CALL_USER":
                question, answer = self._call_user(action)
                self._note = f"You asked the user: {question}\nThe user answered: {answer}"
                record = self._step_record(
                    step, decision, action, first=first, execute_seconds=round(time.monotonic() - started, 3)
                )
                # The trajectory keeps the exchange as upstream's runner logs it: an ASK_USER step.
                record.action = {"action_type": "ASK_USER", "question": question, "answer": answer}
                records.append(record)
                continue
            if action.kind == "WAIT":
                # The agent asked to wait: as long as it said, else the setting.
                time.sleep(self.settings.loop.wait_seconds if action.seconds is None else action.seconds)
                fields: dict[str, Any] = {}
            else:
                fields = self._execute(action)
            loop.last_action = None
            records.append(
                self._step_record(
                    step, decision, action, first=first, execute_seconds=round(time.monotonic() - started, 3), **fields
                )
            )
        if not records:  # an unparsable or empty answer: the step is spent
            records.append(self._step_record(step, decision, None, first=True))
        return records, False

    def _call_user(self, action: Action) -> tuple[str, str]:
        """The agent asks the user (``CALL_USER``): the question and the answer. A task without a
        simulated user has nobody to answer (OSWorld-V2's episode overrides this)."""
        return action.question or "", "(no user is available to answer)"

    def _keep_model_io(self, step: int, decision: Decision) -> None:
        messages = self.runner.last_messages
        if not self.settings.reports.keep_model_io or not messages:
            return
        self.recorder.model_io(
            {"step": step, "request": [_message_json(m) for m in messages], "response": decision.response}
        )

    def _agent_loop(self) -> _Loop:
        loop = _Loop()
        deadline = time.monotonic() + self.settings.loop.episode_timeout
        first_step = self._step_base + 1
        last_step = self._step_base + self.settings.loop.max_steps
        with self._phase("agent"):
            try:
                obs = self._observe(self._step_base)
                loop.last_screen = obs.screenshot
                for step in range(first_step, last_step + 1):
                    if time.monotonic() >= deadline:
                        loop.termination = Termination.TIMEOUT
                        return loop
                    self.observer.step(step, last_step)
                    decision = self.runner.predict(obs)
                    loop.steps = step - self._step_base
                    loop.usage = loop.usage.add(decision.usage)
                    self._keep_model_io(step, decision)
                    records, ended = self._act(step, decision, loop)
                    # The step's screenshot is the screen after its actions, as upstream's; the
                    # next prompt sees it. No prompt follows the last one: no tree is read for it.
                    if ended or step == last_step:
                        loop.last_screen = self.guest.screenshot()
                    else:
                        obs = self._observe(step)
                        loop.last_screen = obs.screenshot
                    for index, record in enumerate(records):
                        self.recorder.step(record, loop.last_screen if index == len(records) - 1 else None)
                    self.observer.stepped(step, decision.response, loop.last_screen, decision.usage)
                    if ended:
                        return loop
                return loop
            except ModelError as exc:
                raise _Masked(Termination.MODEL_ERROR, str(exc)) from None
            except GuestError as exc:
                raise self._mask(Termination.SANDBOX_ERROR, exc) from None

    def _settle_start(self) -> None:
        """Wait for what setup launched to finish opening before the first observation (``start_settle``)."""
        mode = self.settings.loop.start_settle
        try:
            if mode == "quiet":
                settled = wait_quiet(self.guest, [], limit=START_QUIET_LIMIT_S)
            else:
                settled = wait_fixed(float(mode))
        except GuestError as exc:
            raise self._mask(Termination.SETUP_ERROR, exc) from None
        self.result.start_settle = settled

    def _settle(self, last_screen: bytes | None) -> None:
        """Wait for the guest to settle before the evaluation reads it (``eval_settle``)."""
        self.observer.phase("evaluation")
        mode = self.settings.loop.eval_settle
        try:
            if mode == "quiet":
                settled = wait_quiet(self.guest, watched_files(self.entry.task.evaluator), last_screen=last_screen)
            else:
                settled = wait_fixed(float(mode))
        except GuestError as exc:
            raise self._mask(Termination.EVALUATOR_ERROR, exc) from None
        self.result.settle = settled

    def _evaluate(self, last_action: str | None) -> None:
        with self._phase("evaluation"):
            try:
                evaluation = evaluate(self.context, self.entry.task, last_action)
            except SetupError as exc:  # a postconfig step
                raise self._mask(Termination.SETUP_ERROR, exc) from None
            except EvaluatorUnavailable as exc:
                raise _Masked(Termination.UNSUPPORTED, str(exc)) from None
            except EvaluatorError as exc:
                raise self._mask(Termination.EVALUATOR_ERROR, exc) from None
            except GuestError as exc:
                raise self._mask(Termination.EVALUATOR_ERROR, exc) from None
        self.result.score = evaluation.score
        self.result.metric_scores = [s for s in evaluation.metric_scores if s is not None]
        ending = (
            f"the runner stopped the episode after {self.result.steps} step(s): {self._stop}"
            if self._stop
            else _ending(self.result)
        )
        self.result.message = f"{ending}; {evaluation.message}"

    def _final_artifacts(self, last_screen: bytes | None) -> None:
        """The final screen (and the video): best effort, a missing picture is not a second fault."""
        try:
            final = last_screen if last_screen is not None else self.guest.screenshot()
            self.result.artifacts["final_screenshot"] = self.recorder.final_screenshot(final)
            if self.settings.reports.keep_video:
                with tempfile.TemporaryDirectory() as tmp:
                    mp4 = self.guest.end_recording(Path(tmp) / "recording.mp4")
                    name = self.recorder.video(mp4.read_bytes())
                    if name:
                        self.result.artifacts["recording"] = name
        except GuestError:
            pass

    # --- the whole episode -------------------------------------------------------------------

    def run(self) -> TaskResult:
        """Run the episode to its end and write its record. Raises only on Ctrl-C (after recording it)."""
        started = time.monotonic()
        result = self.result
        result.started_at = now_iso()
        try:
            self._setup()
            self._settle_start()
            loop = self._agent_loop()
            result.steps, result.usage, result.termination = loop.steps, loop.usage, loop.termination
            self._final_artifacts(loop.last_screen)
            self._settle(loop.last_screen)
            self._evaluate(loop.last_action)
        except _ScoreZero as exc:
            result.termination, result.score = Termination.FAIL, 0.0
            result.message = f"a setup step declared score_zero failed: {exc}"
        except _Masked as exc:
            result.termination, result.score = exc.termination, None
            result.message = str(exc)
        except KeyboardInterrupt:
            result.termination, result.score = Termination.INTERRUPTED, None
            result.message = "interrupted"
            raise
        except Exception as exc:
            # Anything else that escapes (a bug, a report folder that refuses a write) is the harness's
            # fault: the record says so, never the "interrupted" it starts with.
            result.termination, result.score = Termination.HARNESS_ERROR, None
            result.message = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if result.termination is not Termination.INTERRUPTED:
                self._check_services()
                self._check_human_input()
            self._finish(started)
        return result

    def _check_services(self) -> None:
        """A service that died during the task leaves no valid score (nor a zero), whatever the episode
        ended with: what the task saw of it cannot be trusted. The task is masked ``service_error``."""
        if self.service_check is None:
            return
        problem = self.service_check()
        if problem is not None:
            self._void(Termination.SERVICE_ERROR, problem)

    def _check_human_input(self) -> None:
        """A person who sent input to the desktop (the live page's watch view, with ``live_input``) voids
        the score, whatever the episode ended with: the task is masked ``human_interference``."""
        touched = self.observer.human_input()
        if touched is None:
            return
        self.result.human_input = touched
        self._void(
            Termination.HUMAN_INTERFERENCE,
            f"a person sent {touched.messages} input message(s) to the desktop through the {touched.via}, "
            f"first at {touched.first_at}",
        )

    def _void(self, termination: Termination, why: str) -> None:
        """Mask an ended episode: no score (nor a zero); its message says ``why``, then how it had ended."""
        result = self.result
        ended = f"; the episode had ended {result.termination.value}" + (
            f": {result.message}" if result.message else ""
        )
        result.termination, result.score, result.metric_scores = termination, None, []
        result.message = why + ended

    def _read_restarts(self) -> None:
        """Which supervised processes of the guest restarted (an agent's action may have killed them):
        best effort, read from a guest that still answers; None when it cannot say."""
        if self.result.termination in (Termination.SANDBOX_LOST, Termination.SANDBOX_ERROR, Termination.INTERRUPTED):
            return
        try:
            found = self.guest.restarts()
            if found is not None:
                self.result.restarts = [RestartRecord.model_validate(each) for each in found]
        except (GuestError, ValueError):  # ValueError: pydantic's, for entries of another shape
            return

    def _finish(self, started: float) -> None:
        self._read_restarts()
        self.durations.total = round(time.monotonic() - started, 3)
        self.result.durations = self.durations
        self.result.finished_at = now_iso()
        self.result.setup_steps = [s.to_json() for s in self.context.steps]
        self.recorder.finish(self.result)
        self.context.close()


def _ending(result: TaskResult) -> str:
    return {
        Termination.DONE: f"the agent said DONE after {result.steps} step(s)",
        Termination.FAIL: f"the agent said FAIL after {result.steps} step(s)",
        Termination.MAX_STEPS: f"the step budget ran out after {result.steps} step(s)",
        Termination.TIMEOUT: f"the episode's time limit ran out after {result.steps} step(s)",
    }.get(result.termination, result.termination.value)


def _message_json(message: Message) -> dict[str, Any]:
    """A model request message for model_io.jsonl: text kept, images by size only."""
    parts: list[dict[str, Any]] = [
        {"text": part.text} if isinstance(part, Text) else {"image_png_bytes": len(part.data)} for part in message.parts
    ]
    return {"role": message.role, "parts": parts}
