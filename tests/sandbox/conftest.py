"""Fixtures of the sandbox tests: a real Docker engine, real images, unique run ids.

Tests that run the plugin itself do it through ``pytester`` (in-process or in a subprocess) with
a run id of their own, and check afterwards that no container of that run is left.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import docker
import pytest

from tests.sandbox import support


@pytest.fixture(scope="session")
def stand_in(engine: docker.DockerClient) -> str:
    """Tag of the small stand-in guest image."""
    return support.stand_in_image(engine)


@pytest.fixture
def run_id(engine: docker.DockerClient) -> Iterator[str]:
    """A run id of this test's own; whatever container of it is left fails nothing but is removed."""
    value = f"sbx-{secrets.token_hex(4)}"
    yield value
    support.remove_run(engine, value)


@pytest.fixture
def osworld_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester whose runs write their reports into its own folder."""
    pytester.makeini("[pytest]\n")
    return pytester
