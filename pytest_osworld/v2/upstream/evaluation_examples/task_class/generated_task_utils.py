"""``evaluation_examples.task_class.generated_task_utils`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.scoring`."""

from __future__ import annotations

from pytest_osworld.v2.api.scoring import Spec as Spec
from pytest_osworld.v2.api.scoring import (
    aggregate_scores,
    call_metric,
    evaluate_infeasible_task,
    evaluate_metric,
    evaluate_metric_list,
    get_evaluator_state,
    run_postconfig,
)

__all__ = [
    "aggregate_scores",
    "call_metric",
    "evaluate_infeasible_task",
    "evaluate_metric",
    "evaluate_metric_list",
    "get_evaluator_state",
    "run_postconfig",
]
