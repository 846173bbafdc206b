"""The project's own tests: which of them need the Docker engine, and the guard that keeps that true.

A test that needs the engine carries the ``docker`` marker (``pytest -m "not docker"`` runs the rest
with no engine at all); one without it that reaches the engine fails (tests/support/engine_guard.py).
"""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.import_plugin("tests.support.engine_guard")
