"""Fixtures of the services tests: unique run ids (the engine and the desktop image: tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture
def osworld_pytester(pytester: pytest.Pytester, desktop_image: str) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    return pytester
