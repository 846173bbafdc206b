"""OSWorld's evaluator metrics, with OSWorld's semantics, organised by application.

Use the registry: ``get_metric(name)`` for the implementation, ``missing_metrics(names)``
for names with none, and ``metric_unavailable_reason(name)`` for a known metric that
needs an optional library this machine lacks (the task is then skipped with that reason).
``infeasible`` is decided by the evaluator and has no metric function.
"""

# Importing the application modules registers their metrics.
from . import (  # noqa: F401
    chrome,
    docs,
    general,
    images,
    os,
    others,
    pdf,
    slides,
    table,
    thunderbird,
    vlc,
    vscode,
)
from ._registry import (
    EVALUATOR_HANDLED,
    METRICS,
    MetricFn,
    get_metric,
    metric,
    metric_unavailable_reason,
    missing_metrics,
    unavailable_metrics,
)

__all__ = [
    "EVALUATOR_HANDLED",
    "METRICS",
    "MetricFn",
    "get_metric",
    "metric",
    "metric_unavailable_reason",
    "missing_metrics",
    "unavailable_metrics",
]
