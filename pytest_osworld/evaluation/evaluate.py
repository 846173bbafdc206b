"""The task's own evaluator, with upstream's semantics.

Order, as upstream's ``DesktopEnv.evaluate``:

1. run ``evaluator.postconfig`` (same steps as ``config``);
2. ``infeasible``: 1 when the last action was FAIL, else 0; any other task scores 0 after a FAIL;
3. per metric, in order: get the result, then the expected value, then call the metric;
4. one metric: its score; a result file that is missing scores 0;
5. a list: ``conj: "and"`` (default) stops at the first 0 and gives the mean, ``"or"`` stops at the
   first 1 and gives the max. ``result``/``expected``/``options`` are parallel lists whose entries may
   be null (no getter, no options).

A getter that returns ``None`` for the result (no such file, no such tab) gives that metric 0
without calling it. Any other failure of a getter or a metric raises :class:`EvaluatorError`:
a crash is never turned into a silent zero.

Scores are the metrics' own numbers, as upstream returns them: nothing is clamped, so a metric that
answers a fraction or a negative number (``compare_images``' SSIM lies in [-1, 1]) gives that score,
counts as it is in the mean of ``and`` and the max of ``or``, and only an exact 0 stops ``and``
and an exact 1 stops ``or``. A value that is not a finite number (None, NaN, infinity) has no
place in a result record and is an :class:`EvaluatorError`.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from pytest_osworld.errors import EvaluatorError, EvaluatorUnavailable
from pytest_osworld.evaluation.getters import get_getter
from pytest_osworld.guest.client import GuestUnreachable
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.setup.steps import run_setup
from pytest_osworld.tasks.model import Evaluator, Getter, Task


@dataclass(frozen=True)
class Evaluation:
    """A valid score (the metrics' numbers, usually in [0, 1], never clamped); ``metric_scores`` has
    one entry per metric (None: not reached)."""

    score: float
    metric_scores: list[float | None] = field(default_factory=list)
    message: str = ""


def is_fail(action: Any) -> bool:
    """Whether an action is FAIL: the bare word, ``{"action_type": "FAIL"}`` or a runner's Action."""
    if action is None:
        return False
    if isinstance(action, str):
        return action == "FAIL"
    if isinstance(action, dict):
        return action.get("action_type") == "FAIL"
    return getattr(action, "kind", None) == "FAIL"


def _entries(value: Any, count: int) -> list[Any]:
    if isinstance(value, list):
        return value
    return [value] * count if value is None else [value]


def _run_getter(ctx: TaskContext, config: Getter, role: str, metric: str) -> Any:
    try:
        fn = get_getter(config.type)
    except KeyError:
        raise EvaluatorError(
            f"{role} getter {config.type!r} of metric {metric!r} is not implemented; "
            "check the task's support with: pytest-osworld tasks support INPUT"
        ) from None
    # A private copy: some getters write into their config (rule_relativeTime), and a task may be
    # evaluated more than once.
    try:
        return fn(ctx, copy.deepcopy(config.to_json()))
    except (GuestUnreachable, FileNotFoundError):
        raise
    except Exception as exc:  # a getter's crash is the evaluator's failure, never a score
        raise EvaluatorError(f"{role} getter {config.type!r} of metric {metric!r} failed: {_describe(exc)}") from exc


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _score(name: str, value: Any) -> float:
    """The metric's number as upstream's ``evaluate`` passes it on: unclamped, fractions and negatives kept."""
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise EvaluatorError(f"metric {name!r} returned {value!r}, not a number") from None
    if not math.isfinite(score):
        raise EvaluatorError(f"metric {name!r} returned {score!r}, not a finite number")
    return score


def _call_metric(name: str, result: Any, expected: Any, has_expected: bool, options: dict[str, Any]) -> float:
    from pytest_osworld.evaluation.metrics import get_metric

    try:
        fn = get_metric(name)
    except KeyError:
        raise EvaluatorError(
            f"metric {name!r} is not implemented; check the task's support with: pytest-osworld tasks support INPUT"
        ) from None
    try:
        value = fn(result, expected, **options) if has_expected else fn(result, **options)
    except EvaluatorUnavailable as exc:  # the metric's own: named here
        raise EvaluatorUnavailable(f"metric {name!r} cannot run here: {exc}") from None
    except Exception as exc:  # a metric's crash is the evaluator's failure, never a score
        raise EvaluatorError(f"metric {name!r} failed: {_describe(exc)}") from exc
    return _score(name, value)


def _one_metric(
    ctx: TaskContext, name: str, result_cfg: Getter | None, expected_cfg: Getter | None, options: dict[str, Any] | None
) -> tuple[float, str]:
    """One metric's score and a note; a missing result scores 0."""
    if result_cfg is None:
        raise EvaluatorError(f"metric {name!r} has no result getter: the task is malformed")
    try:
        result = _run_getter(ctx, result_cfg, "result", name)
    except FileNotFoundError as exc:
        return 0.0, f"{name}: result file missing ({exc})"
    if result is None:
        return 0.0, f"{name}: no result ({result_cfg.type} found nothing)"
    expected = None
    if expected_cfg is not None:
        try:
            expected = _run_getter(ctx, expected_cfg, "expected", name)
        except FileNotFoundError as exc:
            raise EvaluatorError(
                f"expected getter {expected_cfg.type!r} of metric {name!r}: missing file {exc}"
            ) from None
    score = _call_metric(name, result, expected, expected_cfg is not None, dict(options or {}))
    return score, f"{name}: {score:g}"


def score_metrics(ctx: TaskContext, evaluator: Evaluator) -> Evaluation:
    """Steps 3-5: the metrics over their getters (postconfig and FAIL already handled)."""
    if isinstance(evaluator.func, str):
        score, note = _one_metric(
            ctx,
            evaluator.func,
            evaluator.result if isinstance(evaluator.result, Getter) else None,
            evaluator.expected if isinstance(evaluator.expected, Getter) else None,
            evaluator.options if isinstance(evaluator.options, dict) else None,
        )
        return Evaluation(score, [score], note)
    names = evaluator.func
    results = _entries(evaluator.result, len(names))
    expecteds = _entries(evaluator.expected, len(names))
    options = _entries(evaluator.options, len(names))
    conj = evaluator.conj or "and"
    scores: list[float | None] = [None] * len(names)
    notes: list[str] = []
    for i, name in enumerate(names):
        score, note = _one_metric(ctx, name, results[i], expecteds[i], options[i])
        scores[i] = score
        notes.append(note)
        if conj == "and" and score == 0.0:
            return Evaluation(0.0, scores, "; ".join(notes) + " (conj and: stopped at the first 0)")
        if conj == "or" and score == 1.0:
            return Evaluation(1.0, scores, "; ".join(notes) + " (conj or: stopped at the first 1)")
    done = [s for s in scores if s is not None]
    total = sum(done) / len(done) if conj == "and" else max(done)
    return Evaluation(total, scores, "; ".join(notes) + f" ({conj}: {'mean' if conj == 'and' else 'max'})")


def evaluate(ctx: TaskContext, task: Task, last_action: Any) -> Evaluation:
    """Run postconfig, then score the task for an episode whose last action was ``last_action``.

    Raises :class:`SetupError` for a failing postconfig step (a valid zero is returned instead when
    the step declares ``on_nonzero: score_zero``), :class:`EvaluatorError` for a crash, and
    :class:`GuestUnreachable` when the guest stops answering.
    """
    evaluator = task.evaluator
    try:
        run_setup(ctx, evaluator.postconfig, phase="postconfig")
    except SetupError as exc:
        if exc.score_zero:
            return Evaluation(0.0, [], f"postconfig failed, scored 0 as the step declares: {exc}")
        raise
    failed = is_fail(last_action)
    if evaluator.is_infeasible:
        if failed:
            return Evaluation(1.0, [], "infeasible task, and the agent answered FAIL")
        return Evaluation(0.0, [], "infeasible task, but the agent did not answer FAIL")
    if failed:
        return Evaluation(0.0, [None] * len(evaluator.metric_names), "the agent answered FAIL")
    return score_metrics(ctx, evaluator)
