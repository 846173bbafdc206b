"""Fixtures of the sandbox tests: the stand-in image, a pytester of their own (the engine and unique run ids: tests/conftest.py).

Tests that run the plugin itself do it through ``pytester`` (in-process or in a subprocess) with
a run id of their own, and check afterwards that no container of that run is left.
"""

from __future__ import annotations

import docker
import pytest

from tests.sandbox import support


@pytest.fixture(scope="session")
def stand_in(engine: docker.DockerClient) -> str:
    """Tag of the small stand-in guest image."""
    return support.stand_in_image(engine)


@pytest.fixture
def osworld_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester whose runs write their reports into its own folder."""
    pytester.makeini("[pytest]\n")
    return pytester
