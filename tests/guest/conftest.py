"""Fixtures of real desktop containers for the guest server's tests.

A session-wide container serves tests that leave nothing behind that others could see; tests
that change shared state (open applications, settings, an env override) get a fresh one from
``make_guest`` (tests/conftest.py, with the engine and the desktop image). Both are removed at
teardown whatever happened.
"""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from tests.support.guest_containers import Guest, start_guest


@pytest.fixture(scope="session")
def guest(engine: docker.DockerClient, desktop_image: str) -> Iterator[Guest]:
    started = start_guest(engine, desktop_image)
    yield started
    started.close()
