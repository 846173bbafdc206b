"""An agent's action through ``GuestClient.run_action``: every ending is a result, only a gone guest raises,
and an action that reached the guest is never sent twice."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from pytest_osworld.guest import client as guest_client
from pytest_osworld.guest.client import GuestClient, GuestUnreachable
from tests.support.desktop import Desktop
from tests.support.loopback import loopback_http


@pytest.mark.docker
def test_an_action_that_raises_is_a_result_with_its_error(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    marker = f"/tmp/raised-{time.monotonic_ns()}"
    answer = guest.run_action(f"open({marker!r}, 'a').write('ran\\n'); raise RuntimeError('bad')", 30)
    assert answer.returncode == 1 and not answer.timed_out and answer.status == "success"
    assert "RuntimeError: bad" in answer.error
    assert guest.file(marker) == b"ran\n"  # run once: a failed action is not sent again


@pytest.mark.docker
def test_an_action_past_its_time_limit_is_killed_by_the_guest(shared_desktop: Desktop) -> None:
    guest = shared_desktop.client()
    marker = f"/tmp/hung-{time.monotonic_ns()}"
    started = time.monotonic()
    answer = guest.run_action(f"open({marker!r}, 'a').write('ran\\n'); time.sleep(600)", 3)
    waited = time.monotonic() - started
    assert answer.timed_out and answer.returncode == -1 and answer.status == "error"
    assert "did not finish within 3 s" in answer.error
    assert 3 <= waited < 3 + 10, waited  # the guest's kill answered, not the client's own wait
    assert guest.file(marker) == b"ran\n"
    running = guest.execute(["pgrep", "-f", marker])
    assert running.returncode == 1, running.output  # nothing of it is left running


@pytest.mark.docker
def test_a_clean_action_keeps_its_output(shared_desktop: Desktop) -> None:
    answer = shared_desktop.client().run_action("print(pyautogui.size())", 30)
    assert answer.returncode == 0 and answer.error == "" and "1920" in answer.output


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def test_a_guest_that_refuses_connections_is_unreachable_after_the_budget() -> None:
    guest = GuestClient(f"http://127.0.0.1:{_free_port()}", retry_budget=1.5)
    started = time.monotonic()
    with pytest.raises(GuestUnreachable):
        guest.run_action("pass", 10)
    assert time.monotonic() - started < 1.5 + 5  # retried within the budget, then given up


class _SlowGuest(BaseHTTPRequestHandler):
    """A guest server like OSWorld's own: it ignores ``timeout_seconds`` and answers /execute late."""

    protocol_version = "HTTP/1.0"
    executes: list[dict[str, Any]]
    alive: bool

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.executes.append(body)
        time.sleep(5)
        self._answer(200, {"status": "success", "output": "", "error": "", "returncode": 0})

    def do_GET(self) -> None:
        if not self.alive:
            self.connection.close()  # a guest that no longer answers: the connection drops
            return
        self._answer(200, "Linux")

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        with contextlib.suppress(OSError):
            self.send_response(status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)


@contextlib.contextmanager
def _slow_guest(alive: bool) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    executes: list[dict[str, Any]] = []
    handler = type("Handler", (_SlowGuest,), {"executes": executes, "alive": alive})
    with loopback_http(handler, wait_for_answers=False) as url:  # the late /execute answer is not waited for
        yield url, executes


@pytest.mark.parametrize("alive", [True, False], ids=["guest-alive", "guest-gone"])
def test_no_answer_in_time_is_a_time_out_while_the_guest_still_answers(
    monkeypatch: pytest.MonkeyPatch, alive: bool
) -> None:
    monkeypatch.setattr(guest_client, "ACTION_ANSWER_GRACE_S", 0.5)
    with _slow_guest(alive) as (url, executes):
        guest = GuestClient(url, retry_budget=1.0)
        if alive:
            answer = guest.run_action("time.sleep(600)", 1)
            assert answer.timed_out and "did not answer within 1.5 s" in answer.error
        else:
            with pytest.raises(GuestUnreachable):
                guest.run_action("time.sleep(600)", 1)
        assert len(executes) == 1  # sent once, never again
        assert executes[0]["timeout_seconds"] == 1
