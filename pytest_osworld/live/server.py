"""The live page's HTTP server: the pages, the run's stream of changes, screenshots, noVNC's files, and
the websocket of each watch view.

| path | what |
|---|---|
| ``/`` | the run's page (``static/index.html``) |
| ``/events`` | server-sent events: ``snapshot`` (every task) once, then ``update`` (the tasks changed), ``end`` |
| ``/api/state`` | the same snapshot as JSON |
| ``/shot?task=KEY`` | a running task's last screenshot |
| ``/watch?task=KEY[&control=1]`` | the watch page: the task's desktop in noVNC |
| ``/vnc?task=KEY[&control=1]`` | the watch page's websocket, bridged to the sandbox's VNC server |
| ``/novnc/...``, ``/static/...`` | noVNC's files (from its folder), the page's own (from the package) |

Served from a thread of the process that owns the run; every request has a thread of its own. Bound to
loopback unless the setting names another host; a request whose ``Host`` is not this server's
loopback name is refused there (a page elsewhere cannot reach it through DNS rebinding), and so is
a websocket opened from a page of another origin.
"""

from __future__ import annotations

import json
import mimetypes
import os
import socket
import threading
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from pytest_osworld.errors import OsworldError
from pytest_osworld.live.bridge import Bridge
from pytest_osworld.live.channel import Channel
from pytest_osworld.live.rfb import ClientFilter
from pytest_osworld.live.state import LiveState
from pytest_osworld.live.websocket import WebSocket, accept_key, valid_key
from pytest_osworld.record import HumanInput
from pytest_osworld.settings.address import LiveAddress

STATIC = Path(__file__).parent / "static"
UPDATE_INTERVAL_S = 0.25  # at most four updates a second to each page
KEEPALIVE_S = 15.0
_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".html": "text/html"}


class LiveServerError(OsworldError):
    """The server could not listen where it was asked to."""


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _InputLog:
    """A task's input let through, as its mark says it."""

    def __init__(self) -> None:
        self.first_at: str | None = None
        self.last_at = ""
        self.messages = 0


class LiveServer:
    def __init__(
        self,
        address: LiveAddress,
        state: LiveState,
        channel: Channel,
        *,
        novnc: Path | None,
        novnc_problem: str | None = None,
        allow_input: bool = False,
    ) -> None:
        self.state = state
        self.channel = channel
        self.novnc = novnc
        self.novnc_problem = novnc_problem
        self.allow_input = allow_input
        self.stopping = threading.Event()
        self._bridges: set[Bridge] = set()
        self._inputs: dict[str, _InputLog] = {}
        self._lock = threading.Lock()
        family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        server_class = type("LiveHttp", (ThreadingHTTPServer,), {"address_family": family})
        try:
            self._http = server_class((address.host, address.port), _handler_for(self))
        except OSError as exc:
            raise LiveServerError(f"--osworld-live {address}: cannot listen there: {exc.strerror or exc}") from None
        self._http.daemon_threads = True
        self._http.block_on_close = False
        self.address = address.with_port(int(self._http.server_address[1]))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return self.address.url

    def start(self) -> LiveServer:
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.2}, name="osworld-live", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        self.stopping.set()
        with self._lock:
            bridges = list(self._bridges)
        for bridge in bridges:
            bridge.stop()
        self._http.shutdown()
        self._http.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- what the handler asks ----------------------------------------------------------------

    def host_allowed(self, host: str | None) -> bool:
        if not self.address.loopback_only:
            return True
        port = self.address.port
        return host in (f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", f"{self.address.host}:{port}")

    def bridge(self, ws: WebSocket, key: str, target: tuple[str, int], *, control: bool) -> str:
        client_filter = ClientFilter(
            allow_input=control and self.allow_input,
            on_input=lambda _kind: self._input(key),
            on_drop=lambda _kind: self.state.count_input(key, dropped=1),
        )
        bridge = Bridge(ws, target, client_filter)
        with self._lock:
            self._bridges.add(bridge)
        try:
            return bridge.run()
        finally:
            with self._lock:
                self._bridges.discard(bridge)

    def _input(self, key: str) -> None:
        """A person's input is about to reach a task's desktop: mark the task first (a small file
        replaced by rename, once per input message: the episode may end at any moment and read it)."""
        at = _now_iso()
        with self._lock:
            log = self._inputs.setdefault(key, _InputLog())
            log.first_at = log.first_at or at
            log.last_at = at
            log.messages += 1
            self.channel.mark_input(key, HumanInput(first_at=log.first_at, last_at=at, messages=log.messages))
        self.state.count_input(key, sent=1, at=at)


def _handler_for(server: LiveServer) -> type[BaseHTTPRequestHandler]:
    return type("LiveHandler", (_Handler,), {"live": server})


class _Handler(BaseHTTPRequestHandler):
    live: LiveServer
    protocol_version = "HTTP/1.1"
    server_version = "pytest-osworld-live"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the run's terminal is pytest's

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(split.query).items()}
        if not self.live.host_allowed(self.headers.get("Host")):
            self._text(HTTPStatus.FORBIDDEN, "the live page answers on its own address only")
            return
        route = split.path
        try:
            if route == "/":
                self._file(STATIC / "index.html")
            elif route.startswith("/static/"):
                self._file(_inside(STATIC, route.removeprefix("/static/")))
            elif route == "/api/state":
                self._json(self.live.state.snapshot())
            elif route == "/events":
                self._events()
            elif route == "/shot":
                self._file(self.live.channel.shot_path(query.get("task", "")), cache=False)
            elif route == "/watch":
                if self.live.novnc is None:
                    self._text(HTTPStatus.SERVICE_UNAVAILABLE, self.live.novnc_problem or "noVNC is missing")
                else:
                    self._file(STATIC / "watch.html")
            elif route.startswith("/novnc/") and self.live.novnc is not None:
                self._file(_inside(self.live.novnc, route.removeprefix("/novnc/")))
            elif route == "/vnc":
                self._vnc(query.get("task", ""), control=query.get("control") == "1")
            else:
                self._text(HTTPStatus.NOT_FOUND, f"no page {route}")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # --- answers

    def _send(self, status: int, body: bytes, content_type: str, *, cache: bool = True) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-cache" if cache else "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _text(self, status: int, text: str) -> None:
        self._send(status, (text + "\n").encode(), "text/plain; charset=utf-8")

    def _json(self, value: Any) -> None:
        self._send(HTTPStatus.OK, json.dumps(value).encode(), "application/json")

    def _file(self, path: Path | None, *, cache: bool = True) -> None:
        try:
            body = path.read_bytes() if path is not None else None
        except OSError:
            body = None
        if path is None or body is None:
            self._text(HTTPStatus.NOT_FOUND, "not found")
            return
        kind = _TYPES.get(path.suffix) or mimetypes.guess_type(path.name)[0] or "application/octet-stream"
        self._send(HTTPStatus.OK, body, kind + ("; charset=utf-8" if kind.startswith("text/") else ""), cache=cache)

    def _events(self) -> None:
        live = self.live
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.close_connection = True
        snapshot = live.state.snapshot()
        self._event("snapshot", snapshot)
        seen = snapshot["version"]
        while not live.stopping.is_set():
            current = live.state.wait(seen, KEEPALIVE_S)
            if current > seen:
                update = live.state.snapshot(since=seen)
                seen = update["version"]
                self._event("update", update)
                if update["run"]["ended"] is not None:
                    self._event("end", {})
                    return
            else:
                self.wfile.write(b": keepalive\n\n")
                self.wfile.flush()
            live.stopping.wait(UPDATE_INTERVAL_S)

    def _event(self, name: str, data: Any) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _vnc(self, key: str, *, control: bool) -> None:
        headers = self.headers
        if headers.get("Upgrade", "").lower() != "websocket" or not valid_key(headers.get("Sec-WebSocket-Key")):
            self._text(HTTPStatus.BAD_REQUEST, "a websocket is expected here")
            return
        origin = headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != headers.get("Host"):
            self._text(HTTPStatus.FORBIDDEN, "a watch view is opened from the live page only")
            return
        vnc = self.live.state.vnc_of(key)
        if vnc is None:
            self._text(HTTPStatus.NOT_FOUND, f"task {key!r} is not running, or its sandbox has no VNC server")
            return
        host, _, port = vnc.rpartition(":")
        self.send_response(HTTPStatus.SWITCHING_PROTOCOLS)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept_key(headers["Sec-WebSocket-Key"]))
        offered = [p.strip() for p in headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        if "binary" in offered:
            self.send_header("Sec-WebSocket-Protocol", "binary")
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        ws = WebSocket(self.connection, self.rfile)  # type: ignore[arg-type]
        self.live.bridge(ws, key, (host.strip("[]"), int(port)), control=control)


def _inside(root: Path, relative: str) -> Path | None:
    """``root / relative``, or None when the path would leave ``root``. Judged on the path as written
    (``..`` taken out), not on where symbolic links lead: a package's own links (Debian links some of
    noVNC's vendored files to shared copies) are followed."""
    base = os.path.normpath(root)
    path = os.path.normpath(os.path.join(base, unquote(relative)))
    return Path(path) if path.startswith(base + os.sep) and os.path.isfile(path) else None
