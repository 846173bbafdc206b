"""Fixtures of the fault matrix: the Docker engine of its own (for the engine-restart fault)."""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from tests.support.faults.engine import OwnEngine, own_engine


@pytest.fixture(scope="session")
def fault_engine() -> Iterator[OwnEngine]:
    """A second dockerd beside the shared one, with the desktop image (copied in once per machine),
    stopped at the end of the session; the shared engine is never restarted."""
    with own_engine() as engine:
        shared = docker.from_env()
        try:
            engine.ensure_desktop_image(shared)
        finally:
            shared.close()
        yield engine
