"""Tests that reach the Docker engine must say so with the ``docker`` marker (a pytest plugin, loaded by
tests/conftest.py).

While a test without the marker runs (setup, call and teardown), ``DOCKER_HOST`` points at a guard: a
Unix socket of this process that answers every request with an error naming the marker, and notes that
it was asked. Pytest runs and programs the test starts inherit the address, so an engine reached through
them is caught too. A phase in which the guard was asked fails, even when the code under test swallowed
the error (a mask, a skip, a retry): ``pytest -m "not docker"`` then really runs without an engine.
"""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import tempfile
import threading
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

MARKER = "docker"
MESSAGE = (
    f"this test reached the Docker engine but is not marked {MARKER!r}: mark it @pytest.mark.{MARKER} "
    f"(or pytestmark = pytest.mark.{MARKER} for a module whose tests all need the engine)"
)


class _Answer(socketserver.StreamRequestHandler):
    server: _GuardServer

    def handle(self) -> None:
        request_line = self.rfile.readline(2048).decode("latin-1").strip()
        self.server.asked(request_line)
        body = json.dumps({"message": MESSAGE}).encode()
        head = (
            "HTTP/1.1 500 Internal Server Error\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        with contextlib.suppress(OSError):  # the client may have hung up first
            self.wfile.write(head.encode() + body)


class _GuardServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str) -> None:
        super().__init__(path, _Answer)
        self._lock = threading.Lock()
        self._requests: list[str] = []

    def asked(self, request_line: str) -> None:
        with self._lock:
            self._requests.append(request_line)

    def drain(self) -> list[str]:
        with self._lock:
            requests, self._requests = self._requests, []
        return requests


class EngineGuard:
    """The guard socket of one pytest process (one per xdist worker)."""

    def __init__(self) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="engine-guard-")
        path = Path(self._folder.name) / "docker.sock"
        self._server = _GuardServer(str(path))
        self.url = f"unix://{path}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="engine-guard", daemon=True)
        self._thread.start()

    @contextmanager
    def active(self) -> Iterator[None]:
        """``DOCKER_HOST`` at the guard for the duration; what the test set it to is undone after."""
        before = os.environ.get("DOCKER_HOST")
        os.environ["DOCKER_HOST"] = self.url
        try:
            yield
        finally:
            if before is None:
                os.environ.pop("DOCKER_HOST", None)
            else:
                os.environ["DOCKER_HOST"] = before

    def drain(self) -> list[str]:
        """The requests the guard answered since the last call."""
        return self._server.drain()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._folder.cleanup()


def engine_problem() -> str | None:
    """Why the Docker engine the tests use does not answer (None when it does)."""
    import docker  # only the marked tests' process needs the SDK here

    try:
        client = docker.from_env(timeout=20)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any failure means there is no engine to test against
        return f"no Docker engine answers ({exc}); start dockerd (.ci/setup does)"
    return None


# --- the plugin's hooks

_GUARD = pytest.StashKey[EngineGuard]()
_ENGINE_PROBLEM = pytest.StashKey[str | None]()  # None: the engine answered


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: needs a Docker engine (the fast loop without one: -m 'not {MARKER}')"
    )
    config.stash[_GUARD] = EngineGuard()


def pytest_unconfigure(config: pytest.Config) -> None:
    guard = config.stash.get(_GUARD, None)
    if guard is not None:
        guard.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that needs the engine fails at once, saying how to start one, when none answers."""
    if item.get_closest_marker(MARKER) is None:
        return
    if _ENGINE_PROBLEM not in item.config.stash:
        item.config.stash[_ENGINE_PROBLEM] = engine_problem()
    problem = item.config.stash[_ENGINE_PROBLEM]
    if problem:
        pytest.fail(problem, pytrace=False)


def _guarded(item: pytest.Item) -> EngineGuard | None:
    if item.get_closest_marker(MARKER) is not None:
        return None
    return item.config.stash.get(_GUARD, None)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    guard = _guarded(item)
    if guard is None:
        return (yield)
    guard.drain()  # what an earlier, marked test's leftovers asked is not this test's
    with guard.active():
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    report = yield
    guard = _guarded(item)
    if guard is None or not isinstance(report, pytest.TestReport):
        return report
    asked = guard.drain()
    if not asked:
        return report
    said = f"{MESSAGE}; the guard answered: {', '.join(sorted(set(asked))[:5])}"
    if report.outcome == "failed":
        report.sections.append(("Docker engine guard", said))
    else:
        report.outcome = "failed"
        report.longrepr = said
    return report
