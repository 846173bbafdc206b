"""The metric registry: OSWorld metric names mapped to their implementations.

A metric is ``metric(result, expected=None, **options) -> float`` (a score, usually in [0, 1]: some
upstream metrics give fractions or negatives, kept as they are),
called with what the task's getters returned. Metrics that need an optional third-party
library are registered all the same, with the import names they need, so a task can be
skipped with a clear reason on a machine that lacks them instead of crashing mid-run.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any, TypeVar

from pytest_osworld.errors import EvaluatorUnavailable

MetricFn = Callable[..., float]
F = TypeVar("F", bound=Callable[..., Any])

METRICS: dict[str, MetricFn] = {}

# Names that appear as `evaluator.func` but are decided by the evaluator itself.
EVALUATOR_HANDLED: frozenset[str] = frozenset({"infeasible"})


@dataclass(frozen=True)
class Requirement:
    """An importable module a metric needs, and the pip package that provides it."""

    module: str
    package: str


_REQUIREMENTS: dict[str, tuple[Requirement, ...]] = {}


def metric(name: str, *, requires: Iterable[tuple[str, str]] = ()) -> Callable[[F], F]:
    """Register ``fn`` under the OSWorld metric ``name``.

    ``requires`` lists ``(module, pip package)`` pairs that must be importable for the
    metric to run; they are checked by :func:`metric_unavailable_reason`.
    """

    reqs = tuple(Requirement(module, package) for module, package in requires)

    def register(fn: F) -> F:
        if name in METRICS:
            raise ValueError(f"metric {name!r} registered twice")
        METRICS[name] = fn
        _REQUIREMENTS[name] = reqs
        return fn

    return register


def get_metric(name: str) -> MetricFn:
    """The implementation of metric ``name``; ``KeyError`` when the name is unknown."""
    try:
        return METRICS[name]
    except KeyError:
        if name in EVALUATOR_HANDLED:
            raise KeyError(f"metric {name!r} is decided by the evaluator, not by a metric function") from None
        raise KeyError(f"unknown OSWorld metric {name!r}") from None


def missing_metrics(names: Iterable[str]) -> list[str]:
    """The names among ``names`` that have no implementation here (order kept, no duplicates)."""
    missing: list[str] = []
    for name in names:
        if name not in METRICS and name not in EVALUATOR_HANDLED and name not in missing:
            missing.append(name)
    return missing


@cache
def module_available(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def requirement_reason(reqs: Iterable[Requirement]) -> str | None:
    """``"needs pip install X Y"`` for the requirements that are not importable, else ``None``."""
    missing = sorted({r.package for r in reqs if not module_available(r.module)})
    if not missing:
        return None
    return "needs pip install " + " ".join(missing)


def metric_unavailable_reason(name: str) -> str | None:
    """Why the known metric ``name`` cannot run here, or ``None`` when it can.

    Raises ``KeyError`` for an unknown name, like :func:`get_metric`.
    """
    if name in EVALUATOR_HANDLED:
        return None
    if name not in METRICS:
        raise KeyError(f"unknown OSWorld metric {name!r}")
    reason = requirement_reason(_REQUIREMENTS[name])
    return None if reason is None else f"metric {name!r} {reason}"


def unavailable_metrics(names: Iterable[str]) -> dict[str, str]:
    """For each known name in ``names`` that cannot run here, the reason why."""
    out: dict[str, str] = {}
    for name in names:
        if name in METRICS:
            reason = metric_unavailable_reason(name)
            if reason is not None:
                out[name] = reason
    return out


def require(*pairs: tuple[str, str]) -> None:
    """Raise :class:`EvaluatorUnavailable` unless every ``(module, package)`` is importable.

    Used inside a metric for a library that only some of its options need.
    """
    reason = requirement_reason(Requirement(m, p) for m, p in pairs)
    if reason is not None:
        raise EvaluatorUnavailable(reason)
