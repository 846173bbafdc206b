"""The guard behind the ``docker`` marker: an unmarked test that reaches the engine fails, even when the
code under test swallows the engine's error, and ``DOCKER_HOST`` is given back after each test."""

from __future__ import annotations

import os

import pytest

INNER = """
import os

import docker
import pytest


def test_asks_the_engine():
    docker.from_env().ping()


def test_swallows_what_the_engine_said():
    try:
        docker.from_env().ping()
    except Exception:
        pass


def test_never_asks():
    assert 1 + 1 == 2


def test_sees_the_guards_docker_host():
    with open(os.environ["GUARD_TEST_SEEN"], "w") as seen:
        seen.write(os.environ.get("DOCKER_HOST", "<unset>"))
"""


def test_an_unmarked_test_that_reaches_the_engine_fails_the_suite(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_inner=INNER)
    seen = pytester.path / "seen"
    monkeypatch.setenv("GUARD_TEST_SEEN", str(seen))
    before = os.environ.get("DOCKER_HOST", "<unset>")
    result = pytester.runpytest("-p", "tests.support.engine_guard", "-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_asks_the_engine FAILED*",
            "*test_swallows_what_the_engine_said FAILED*",
            "*test_never_asks PASSED*",
        ]
    )
    # The reason names the marker and the request the guard answered.
    result.stdout.fnmatch_lines(["*reached the Docker engine but is not marked 'docker'*GET /*"])
    # Inside an unmarked test DOCKER_HOST is the guard's; after the run, the caller's again.
    assert seen.read_text().startswith("unix://") and "engine-guard" in seen.read_text()
    assert os.environ.get("DOCKER_HOST", "<unset>") == before
