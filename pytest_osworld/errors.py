"""Errors the project raises on purpose, each with a message meant for a user.

Every exception class of the package derives from :class:`OsworldError` (keeping other bases beside it,
e.g. ``ValueError``), but for a few that never reach a user; tests/test_errors.py lists those, each with
the reason, and fails for any other."""

from __future__ import annotations

from collections.abc import Sequence


class OsworldError(Exception):
    """Base of every error the project reports to a user (never with a traceback)."""


class TaskInputError(OsworldError):
    """A task file, split file or task object is malformed.

    ``where`` names the file and the line or task id; ``fix`` says what to do about it.
    """

    def __init__(self, where: str, problem: str, fix: str | None = None) -> None:
        self.where = where
        self.problem = problem
        self.fix = fix
        text = f"{where}: {problem}"
        if fix:
            text += f"; {fix}"
        super().__init__(text)


class TaskInputErrors(OsworldError):
    """Every problem found in one input, reported together so one run shows them all."""

    def __init__(self, errors: Sequence[TaskInputError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(str(e) for e in self.errors))


class SettingsError(OsworldError):
    """A setting has a bad value; the message names the key and where it came from."""


class SandboxError(OsworldError):
    """The sandbox could not be started (a mask: ``sandbox_error``). The message says why and how to fix it.

    Here, in the core, and not in ``sandbox``: the guest's client (below the sandbox) raises
    :class:`SandboxLost` when the guest stops answering."""

    reason = "sandbox_error"


class SandboxLost(SandboxError):
    """A started sandbox died or stopped answering (a mask: ``sandbox_lost``)."""

    reason = "sandbox_lost"


class EvaluatorError(OsworldError):
    """A getter or a metric crashed, or the evaluator cannot be run (a mask: ``evaluator_error``)."""

    reason = "evaluator_error"


class EvaluatorUnavailable(EvaluatorError):
    """A metric needs a library this installation lacks for the options this task gives it.

    Known only once the metric runs (the need depends on the options): the task is skipped, not scored.
    """

    reason = "unsupported"
