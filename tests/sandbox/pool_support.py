"""What the warm pool's fast tests run against, without Docker: guests that are real local HTTP
servers answering the calls a claim's check makes, and a provider of such sandboxes whose starts a
test can hold, fail or count."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from pytest_osworld.sandbox import API_PORT, Owner, Progress, Sandbox, SandboxError, SandboxProvider
from pytest_osworld.settings import Settings


class GuestServer:
    """A guest API on loopback: ``/screen_size`` (``screen`` may be set to None: the screen is down)
    and ``/execute`` of ``mkdir PATH`` as the guest would run it (a second mkdir of a path fails)."""

    def __init__(self) -> None:
        self.screen: tuple[int, int] | None = (1920, 1080)
        self.made: set[str] = set()
        self.calls: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                server.calls.append(self.path)
                if self.path == "/screen_size":
                    if server.screen is None:
                        self._answer(500, {"error": "cannot open display :0"})
                    else:
                        self._answer(200, {"width": server.screen[0], "height": server.screen[1]})
                elif self.path == "/execute":
                    command = body.get("command") or []
                    code = 0
                    if command[:1] == ["mkdir"]:
                        code = 1 if command[1] in server.made else 0
                        server.made.add(command[1])
                    self._answer(200, {"status": "success", "output": "", "error": "", "returncode": code})
                else:
                    self._answer(404, {"error": "not found"})

            def _answer(self, status: int, data: Mapping[str, Any]) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._http.server_address[1]}"
        threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()


class GuestSandbox(Sandbox):
    """A sandbox whose guest is a :class:`GuestServer`; ``network`` and ``labels`` as it was started."""

    def __init__(self, serial: int, network: str | None, labels: Mapping[str, str]) -> None:
        self.serial = serial
        self.network = network
        self.labels = dict(labels)
        self.guest = GuestServer()
        self.stopped = False

    @property
    def name(self) -> str:
        return f"guest-{self.serial}"

    def url(self, guest_port: int = API_PORT) -> str:
        return self.guest.url

    def alive(self) -> bool:
        return not self.stopped

    def logs(self, tail: int = 50) -> str:
        return ""

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "host": "local-guests", "network": self.network}

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.guest.close()


class GuestProvider(SandboxProvider):
    """Starts :class:`GuestSandbox` es, one at a time or in parallel as asked, and records every start.

    ``gate`` (when set) holds each start until the test sets it; ``fail_next`` makes starts fail with
    that message while it is set; ``prepare`` (what a provider does once before its sandboxes can start
    in parallel) waits for ``preparing`` when it is set."""

    def __init__(self) -> None:
        self.started: list[GuestSandbox] = []
        self.gate: threading.Event | None = None
        self.fail_next: str | None = None
        self.concurrent = 0
        self.most_concurrent = 0
        self.preparing: threading.Event | None = None
        self.prepared = 0
        self._lock = threading.Lock()

    def prepare(self) -> None:
        if self.preparing is not None:
            self.preparing.wait(30)
        self.prepared += 1

    @classmethod
    def from_settings(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> Self:
        return cls()

    @classmethod
    def check(cls, settings: Settings, owner: Owner, *, progress: Progress | None = None) -> None:
        return None

    @classmethod
    def describe_pool(cls, settings: Settings, owner: Owner) -> dict[str, Any]:
        return {}

    def start(self, *, task_key: str, labels: Mapping[str, str] | None = None) -> GuestSandbox:
        return self._start(None, labels or {})

    def start_on_network(self, *, task_key: str, network: str, labels: Mapping[str, str] | None = None) -> GuestSandbox:
        return self._start(network, labels or {})

    def _start(self, network: str | None, labels: Mapping[str, str]) -> GuestSandbox:
        with self._lock:
            self.concurrent += 1
            self.most_concurrent = max(self.most_concurrent, self.concurrent)
        try:
            if self.gate is not None:
                self.gate.wait(30)
            if self.fail_next is not None:
                raise SandboxError(self.fail_next)
            with self._lock:
                sandbox = GuestSandbox(len(self.started) + 1, network, labels)
                self.started.append(sandbox)
            return sandbox
        finally:
            with self._lock:
                self.concurrent -= 1

    def sweep(self, run_id: str, *, pid: int | None = None) -> int:
        return 0

    def close(self) -> None:
        for sandbox in self.started:
            sandbox.stop()
