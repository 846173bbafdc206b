"""Episodes end to end: real sandboxes of the desktop image, real runners, real model HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.bundled_runs import bad_actions_run
from tests.support.model_server import ModelServer, model_server  # noqa: F401  (a fixture)
from tests.support.shared_runs import SharedRun


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """A model server on loopback whose one model, ``scripted``, answers what a test scripts (a module
    may override it with a server of its own)."""
    with ModelServer(models=["scripted"]) as running:
        yield running


@pytest.fixture(scope="session")
def bad_actions(shared_runs_root: Path) -> SharedRun:
    """Every bundled example task played by a model whose first actions raise and hang (3 s limit), with
    OSWorld's 20 s wait before evaluation (tests/support/bundled_runs.py)."""
    return bad_actions_run(shared_runs_root)
