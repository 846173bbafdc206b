"""Evaluator helpers of the task API: ``getters``, ``metrics`` (with ``llm_metrics``), ``model_client``."""

from pytest_osworld.v2.api import getters, metrics

__all__ = ["getters", "metrics"]
