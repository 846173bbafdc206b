"""Metrics by upstream's names (``metrics.compare_table(...)``): the project's v1 metrics; the LLM
metrics in ``llm_metrics``."""

from __future__ import annotations

from typing import Any

from pytest_osworld.evaluation.metrics import METRICS
from pytest_osworld.v2.api import llm_metrics

__all__ = ["llm_metrics"]


def __getattr__(name: str) -> Any:
    if name in METRICS:
        return METRICS[name]
    if hasattr(llm_metrics, name):
        return getattr(llm_metrics, name)
    raise AttributeError(f"no metric {name!r}")
