"""Fixtures of the services tests: unique run ids (the engine and the desktop image: tests/conftest.py)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import docker
import pytest

from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID


@pytest.fixture
def run_id(engine: docker.DockerClient) -> Iterator[str]:
    """A run id of this test's own; whatever it leaves is removed afterwards (the test checks first)."""
    value = f"svc-{secrets.token_hex(4)}"
    yield value
    labels = {"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={value}"]}
    for container in engine.containers.list(all=True, filters=labels):
        container.remove(force=True, v=True)
    for network in engine.networks.list(filters=labels):
        network.remove()


@pytest.fixture
def osworld_pytester(pytester: pytest.Pytester, desktop_image: str) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    return pytester
