"""The host's client waits for a guest server that its supervisor restarts, and not for a stopped sandbox.

A real HTTP server on loopback plays the guest server: it drops the connection of the action that
"kills" it, is down for a moment, then listens again on the same port.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pytest_osworld.guest.client import GuestClient, GuestUnreachable


class _Guest(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    log: list[str]
    kill: Any  # called by a /execute whose command is ["kill-the-server"]

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self.log.append(f"GET {self.path}")
        self._answer(200, "Linux")

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.log.append(f"POST {self.path} {body['command']}")
        if body["command"][-1].endswith("kill-the-server"):
            self.kill()
            self.connection.shutdown(socket.SHUT_RDWR)  # the server dies with the request in flight
            return
        self._answer(200, {"status": "success", "output": "ran", "error": "", "returncode": 0})

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    allow_reuse_address = True  # listen again on the port just closed
    daemon_threads = True


class RestartingGuest:
    """A guest server that goes down when an action kills it and listens again ``down_s`` later."""

    def __init__(self, down_s: float) -> None:
        self.down_s = down_s
        self.log: list[str] = []
        self.restarted_at: float | None = None
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self._server: ThreadingHTTPServer | None = None
        self._start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _start(self) -> None:
        handler = type("Handler", (_Guest,), {"log": self.log, "kill": self._kill})
        server = _Server(("127.0.0.1", self.port), handler)
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def _kill(self) -> None:
        server = self._server
        assert server is not None
        self._server = None
        server.shutdown()  # from a request's own thread: serve_forever runs in another
        server.server_close()  # from now on connections are refused

        def down_then_up() -> None:
            time.sleep(self.down_s)  # how long the supervisor takes to start it again
            self.restarted_at = time.monotonic()
            self._start()

        threading.Thread(target=down_then_up, daemon=True).start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


@pytest.fixture
def restarting() -> Iterator[RestartingGuest]:
    guest = RestartingGuest(down_s=1.0)
    yield guest
    guest.stop()


def test_the_action_that_kills_the_server_fails_and_the_next_call_waits_for_it(restarting: RestartingGuest) -> None:
    client = GuestClient(restarting.url, retry_budget=10.0)
    answer = client.run_action("kill-the-server", 30)
    assert answer.returncode == -1 and answer.status == "error" and not answer.timed_out
    assert "the connection dropped while the action ran" in answer.error
    assert restarting.restarted_at is not None  # it waited for the server before answering
    # A call that is sent once waits for the server too, then runs exactly once.
    assert client.execute(["echo"]).output == "ran"
    assert [line for line in restarting.log if line.startswith("POST")] == [
        "POST /execute ['python3', '-c', 'import pyautogui; import time; pyautogui.FAILSAFE = False; kill-the-server']",
        "POST /execute ['echo']",
    ]


def test_a_call_sent_once_after_a_drop_waits_for_the_server_instead_of_failing(restarting: RestartingGuest) -> None:
    client = GuestClient(restarting.url, retry_budget=10.0)
    killer = GuestClient(restarting.url, retry_budget=0.0)  # another client's action killed it
    with contextlib.suppress(GuestUnreachable):
        killer.execute(["kill-the-server"])
    with pytest.raises(GuestUnreachable):
        client.execute(["echo"])  # the server is down: sent once, it fails ...
    started = time.monotonic()
    assert client.execute(["echo"]).output == "ran"  # ... and the next one waits for it to come back
    assert restarting.restarted_at is not None and restarting.restarted_at >= started - 0.1


def test_a_stopped_sandbox_ends_the_wait_at_once(restarting: RestartingGuest) -> None:
    restarting.down_s = 60.0  # the server does not come back in this test
    asked: list[float] = []

    def sandbox_alive() -> bool:
        asked.append(time.monotonic())
        return False

    client = GuestClient(restarting.url, retry_budget=60.0, sandbox_alive=sandbox_alive)
    started = time.monotonic()
    with pytest.raises(GuestUnreachable) as info:
        client.run_action("kill-the-server", 30)
    assert "the sandbox is no longer running" in str(info.value)
    assert time.monotonic() - started < 10  # not the 60 s budget
    assert len(asked) == 1
