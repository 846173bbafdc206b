"""How an episode's end becomes a pytest outcome, and how a phase report becomes an OSWorld outcome.

The outcome table of docs/results.md, in one place:

- :func:`end_test` ends a task item's test from its result record (``TestedEpisode.run_and_judge``): a score of 1 passes, a valid score
  below 1 fails (:class:`TaskFailed`), an infrastructure fault is an error shown as ``MASKED``
  (:class:`TaskMasked`), a need found only at evaluation skips;
- :func:`classify` reads a phase report back into an :class:`Outcome` for the record and the reports;
- :func:`record_info` is what a report carries of a record written outside the item's own reports (the
  controller's ``worker_lost`` record of a task whose xdist worker died: plugin/crashes.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from pytest_osworld.episode import Episode
from pytest_osworld.errors import OsworldError
from pytest_osworld.record import TaskResult, Termination
from pytest_osworld.results.views import Status


class OutcomeError(OsworldError):
    """Base of the exceptions an episode ends with; shown as their message, never a traceback."""


class TaskFailed(OutcomeError, AssertionError):
    """A valid score below 1.0: the agent did not solve the task. pytest: failed; Allure: failed."""

    def __init__(self, message: str, score: float) -> None:
        super().__init__(message)
        self.score = score


class TaskMasked(OutcomeError):
    """An infrastructure fault: no valid score exists. pytest: MASKED (an error); Allure: broken."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(f"masked ({reason}): {message}")
        self.reason = reason


def end_test(result: TaskResult) -> None:
    """End the test as the outcome table says; returns only when the task scored 1."""
    if result.termination is Termination.UNSUPPORTED:
        pytest.skip(f"unsupported here: {result.message}")
    if result.masked:
        raise TaskMasked(result.termination.value, result.message or "")
    assert result.score is not None, "a record that is not masked has a score"
    if result.score < 1.0:
        raise TaskFailed(f"score {result.score:g}: {result.message}", result.score)


class TestedEpisode(Episode):
    """An episode as a task item runs it: run to its end, then judged by the outcome table."""

    __test__ = False  # a project class, not a test class for pytest to collect

    def run_and_judge(self) -> TaskResult:
        result = self.run()
        end_test(result)
        return result


@dataclass(frozen=True)
class Outcome:
    status: Status
    termination: Termination | None  # None: take it from the episode's record
    message: str | None
    replace_longrepr: bool  # the plugin's own message is clearer than a traceback


def _termination(reason: str | None) -> Termination:
    try:
        return Termination(reason or "")
    except ValueError:
        return Termination.HARNESS_ERROR


def skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr or "skipped")


def classify(report: pytest.TestReport, excinfo: pytest.ExceptionInfo[BaseException] | None) -> Outcome | None:
    """The outcome a phase report carries, or None when the phase decides nothing (a passing setup)."""
    if report.skipped:
        return Outcome("skipped", Termination.UNSUPPORTED, skip_reason(report), False)
    if report.passed:
        return Outcome("passed", None, None, False) if report.when == "call" else None
    if report.when == "teardown":
        return None  # the outcome came before; a teardown error stays pytest's own error
    exc: Any = excinfo.value if excinfo is not None else None
    if isinstance(exc, TaskFailed) and report.when == "call":
        return Outcome("failed", None, str(exc), False)
    if isinstance(exc, TaskMasked):
        return Outcome("masked", _termination(exc.reason), str(exc), True)
    reason = getattr(exc, "reason", None)
    if isinstance(exc, OsworldError):
        # SandboxError ("sandbox_error"), SandboxLost ("sandbox_lost") and any project error that names its mask.
        return Outcome("masked", _termination(reason), str(exc), True)
    # Anything else is a bug somewhere in the harness: masked, with its traceback kept to fix it.
    name = type(exc).__name__ if exc is not None else "error"
    return Outcome("masked", Termination.HARNESS_ERROR, f"{name}: {exc}", False)


_REPORT_INFO = "osworld"  # the report attribute that carries the outcome (xdist sends it to the controller)


def report_info(report: pytest.TestReport) -> dict[str, Any] | None:
    """The outcome a task item's report carries: key, status, termination, score, message."""
    info = report.__dict__.get(_REPORT_INFO)
    return info if isinstance(info, dict) else None


def set_report_info(report: pytest.TestReport, info: dict[str, Any]) -> None:
    # An attribute of the report itself: xdist serializes a report's attributes to the controller.
    report.__dict__[_REPORT_INFO] = info


def record_info(key: str, result: TaskResult) -> dict[str, Any]:
    """The outcome of a record, as a report carries it (the status from the outcome table above)."""
    status = "masked" if result.masked else ("skipped" if result.skipped else "passed" if result.success else "failed")
    return {
        "key": key,
        "status": status,
        "termination": result.termination.value,
        "score": result.score if result.valid else None,
        "message": result.message,
    }
