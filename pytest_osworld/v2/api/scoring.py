"""``evaluation_examples.task_class.generated_task_utils``: how a V2 task's ``evaluate(env)`` scores
itself the way a v1 JSON evaluator is scored, over the project's getters and metrics.

A task's own ``evaluate`` is called as it is: the v1 rules (postconfig, a last action FAIL) hold only
where the task calls these helpers. Their scores follow upstream's module:

- ``postconfig`` steps run first (v1 steps through ``env.setup_controller.setup``), and mark the
  environment used; none given, nothing runs;
- a last action FAIL (``"FAIL"`` or ``{"action_type": "FAIL"}``) scores 0, and 1 in
  :func:`evaluate_infeasible_task` (which scores 0 otherwise);
- a result getter raising ``FileNotFoundError`` scores the metric 0; any other error of the result
  getter is raised; an error of the expected getter or of the metric scores the metric 0;
- a result the getter answers as ``None`` still goes to the metric (most metrics score it 0);
- a list: ``conj="and"`` with ``short_circuit`` stops at the first 0 (and at a missing result file),
  ``"or"`` at the first 1; otherwise :func:`aggregate_scores` (``and``/``avg``: the mean, ``or``: the
  max, ``sum``: the sum capped at 1, anything else: the mean; no scores: 0).

Where upstream's module would turn a fault of the run into a silent zero, these raise instead, so the
task is masked and never scored on it: a lost sandbox, a getter or metric this project does not
implement (:class:`EvaluatorError`) or cannot run on this machine (:class:`EvaluatorUnavailable`), a
shared service the task does not hold, a failed judge call. A postconfig step that fails raises its
``SetupError`` (the task is masked ``setup_error``), unless it declares ``on_nonzero: score_zero``:
then the helper scores 0, as a v1 task's postconfig does.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_osworld.errors import EvaluatorError, EvaluatorUnavailable, SandboxLost
from pytest_osworld.evaluation.evaluate import is_fail
from pytest_osworld.evaluation.getters import CREDENTIAL_GETTERS, GETTERS, getter_unavailable_reason
from pytest_osworld.evaluation.metrics import METRICS, metric_unavailable_reason
from pytest_osworld.setup.errors import SetupError
from pytest_osworld.v2.api import getters, llm_metrics
from pytest_osworld.v2.api.state import RuntimeUnavailable
from pytest_osworld.v2.llm.settings import JudgeError

__all__ = [
    "aggregate_scores",
    "call_metric",
    "evaluate_infeasible_task",
    "evaluate_metric",
    "evaluate_metric_list",
    "get_evaluator_state",
    "run_postconfig",
]

Spec = Mapping[str, Any]

# Faults of the run, not of the task's answer: never turned into a score.
_RUN_FAULTS = (SandboxLost, EvaluatorError, RuntimeUnavailable, JudgeError)


def run_postconfig(env: Any, postconfig: Sequence[Spec] | None = None) -> None:
    """Run v1 ``postconfig`` steps in the task's sandbox and mark the environment used."""
    if not postconfig:
        return
    env.setup_controller.setup(list(postconfig), env.enable_proxy)
    env.is_environment_used = True


def _postconfig_ran(env: Any, postconfig: Sequence[Spec] | None) -> bool:
    """Run the postconfig; False when a step declaring ``on_nonzero: score_zero`` failed (the task scores 0)."""
    try:
        run_postconfig(env, postconfig)
    except SetupError as exc:
        if exc.score_zero:
            return False
        raise
    return True


def _last_action_failed(env: Any) -> bool:
    history = getattr(env, "action_history", None)
    return is_fail(history[-1]) if history else False


def evaluate_infeasible_task(env: Any, *, postconfig: Sequence[Spec] | None = None) -> float:
    """An infeasible task: 1 when the agent's last action was FAIL, else 0."""
    if not _postconfig_ran(env, postconfig):
        return 0.0
    return 1.0 if _last_action_failed(env) else 0.0


def evaluate_metric(
    env: Any,
    *,
    metric_name: str,
    result_spec: Spec | None = None,
    expected_spec: Spec | None = None,
    options: Mapping[str, Any] | None = None,
    postconfig: Sequence[Spec] | None = None,
) -> float:
    """One metric over the getters ``result_spec`` / ``expected_spec`` (v1 getter objects), as a v1
    evaluator with ``func: metric_name`` scores it."""
    if not _postconfig_ran(env, postconfig) or _last_action_failed(env):
        return 0.0
    try:
        result_state = get_evaluator_state(env, result_spec) if result_spec else None
    except FileNotFoundError:
        return 0.0
    return _expected_and_metric(env, metric_name, result_state, expected_spec, options)


def _expected_and_metric(
    env: Any, metric_name: str, result_state: Any, expected_spec: Spec | None, options: Mapping[str, Any] | None
) -> float:
    """The expected value and the metric's score; a failure of either scores 0, as upstream's."""
    try:
        expected_state = get_evaluator_state(env, expected_spec) if expected_spec else None
        return call_metric(metric_name, result_state, expected_state=expected_state, options=options)
    except _RUN_FAULTS:
        raise
    except Exception:  # noqa: BLE001 - upstream scores a crash of the expected getter or the metric 0
        return 0.0


def evaluate_metric_list(
    env: Any,
    *,
    metric_names: Sequence[str],
    result_specs: Sequence[Spec | None],
    expected_specs: Sequence[Spec | None] | None = None,
    options_list: Sequence[Mapping[str, Any] | None] | None = None,
    conj: str = "and",
    short_circuit: bool = True,
    postconfig: Sequence[Spec] | None = None,
) -> float:
    """Several metrics, as a v1 evaluator with a list ``func`` and ``conj`` scores them.

    The lists are parallel; they are walked as far as the shortest goes (upstream's ``zip``)."""
    if not _postconfig_ran(env, postconfig) or _last_action_failed(env):
        return 0.0
    expected_list = list(expected_specs or [None] * len(metric_names))
    options_seq = list(options_list or [{}] * len(metric_names))
    scores: list[float] = []
    for metric_name, result_spec, expected_spec, options in zip(
        metric_names, result_specs, expected_list, options_seq, strict=False
    ):
        try:
            result_state = get_evaluator_state(env, result_spec) if result_spec else None
        except FileNotFoundError:
            if conj == "and" and short_circuit:
                return 0.0
            scores.append(0.0)
            continue
        score = _expected_and_metric(env, metric_name, result_state, expected_spec, options)
        if short_circuit:
            if conj == "and" and score == 0.0:
                return 0.0
            if conj == "or" and score == 1.0:
                return 1.0
        scores.append(score)
    return aggregate_scores(scores, conj=conj)


def get_evaluator_state(env: Any, spec: Spec) -> Any:
    """What the getter ``get_<spec["type"]>`` answers for ``spec`` in the task's sandbox."""
    kind = str(spec["type"])
    getter = getattr(getters, f"get_{kind}", None)
    if not callable(getter):
        raise EvaluatorError(
            f"getter {kind!r} is not implemented here; run the task against its own code with --osworld-v2-code"
        )
    if kind in CREDENTIAL_GETTERS:
        raise EvaluatorUnavailable(f"getter {kind!r} needs Google credentials, which runs here never hold")
    reason = getter_unavailable_reason(kind) if kind in GETTERS else None
    if reason is not None:
        raise EvaluatorUnavailable(reason)
    # A private copy: some getters write into their config, and a task may evaluate more than once.
    return getter(env, copy.deepcopy(dict(spec)))


def call_metric(
    metric_name: str,
    result_state: Any,
    *,
    expected_state: Any = None,
    options: Mapping[str, Any] | None = None,
) -> float:
    """The metric's score: ``metric(result, **options)``, or ``metric(result, expected, **options)``
    when there is an expected value."""
    metric = _metric(metric_name)
    keywords = dict(options or {})
    try:
        if expected_state is None:
            value = metric(result_state, **keywords)
        else:
            value = metric(result_state, expected_state, **keywords)
    except EvaluatorUnavailable as exc:  # the metric's own: named here
        raise EvaluatorUnavailable(f"metric {metric_name!r} cannot run here: {exc}") from None
    return float(value)


def _metric(name: str) -> Callable[..., Any]:
    """The metric upstream's ``getattr(metrics, name)`` finds: a v1 metric or an LLM metric."""
    if name in METRICS:
        reason = metric_unavailable_reason(name)
        if reason is not None:
            raise EvaluatorUnavailable(reason)
        return METRICS[name]
    found = getattr(llm_metrics, name, None)
    if inspect.isfunction(found) and found.__module__ == llm_metrics.__name__ and not name.startswith("_"):
        return found
    raise EvaluatorError(
        f"metric {name!r} is not implemented here; run the task against its own code with --osworld-v2-code"
    )


def aggregate_scores(scores: Iterable[float], *, conj: str = "and") -> float:
    """Several metrics' scores as one: ``and``/``avg`` the mean, ``or`` the max, ``sum`` the sum capped
    at 1, any other ``conj`` the mean; no scores give 0."""
    values = [float(s) for s in scores]
    if not values:
        return 0.0
    if conj == "or":
        return max(values)
    if conj == "sum":
        return min(1.0, sum(values))
    return sum(values) / len(values)
