"""``desktop_env.evaluators.metrics`` as task files import it, re-exported from
:mod:`pytest_osworld.v2.api.metrics`."""

from __future__ import annotations

from pytest_osworld.v2.api.metrics import __getattr__ as __getattr__
from pytest_osworld.v2.upstream.desktop_env.evaluators.metrics import llm_metrics

__all__ = ["llm_metrics"]
