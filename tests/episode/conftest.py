"""Episodes end to end: real sandboxes of the desktop image, real runners, real model HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.model_server import ModelServer, model_server  # noqa: F401  (a fixture)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    """A model server on loopback whose one model, ``scripted``, answers what a test scripts (a module
    may override it with a server of its own)."""
    with ModelServer(models=["scripted"]) as running:
        yield running
