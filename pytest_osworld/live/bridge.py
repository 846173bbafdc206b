"""A watch view's connection: the browser's websocket to the sandbox's VNC server, through the filter.

Two directions, one thread each: the server's bytes go to the browser as they come (the screen); the
browser's messages go through :class:`~pytest_osworld.live.rfb.ClientFilter` and only what it returns
reaches the server.
"""

from __future__ import annotations

import contextlib
import socket
import threading

from pytest_osworld.live.rfb import ClientFilter, RfbRefused
from pytest_osworld.live.websocket import WebSocket, WebSocketClosed

CONNECT_TIMEOUT_S = 10.0
_CHUNK = 1 << 16


class Bridge:
    def __init__(self, ws: WebSocket, target: tuple[str, int], client_filter: ClientFilter) -> None:
        self.ws = ws
        self.target = target
        self.filter = client_filter
        self._sock: socket.socket | None = None
        self.ended: str | None = None  # why it ended

    def run(self) -> str:
        """Bridge until either side ends; returns why it ended."""
        try:
            self._sock = socket.create_connection(self.target, timeout=CONNECT_TIMEOUT_S)
        except OSError as exc:
            self.ws.close(1011)
            return self._end(f"the sandbox's VNC server at {self.target[0]}:{self.target[1]} did not answer: {exc}")
        self._sock.settimeout(None)
        screen = threading.Thread(target=self._to_browser, name="live-vnc-screen", daemon=True)
        screen.start()
        try:
            while True:
                forward = self.filter.feed(self.ws.receive())
                if forward:
                    self._sock.sendall(forward)
        except WebSocketClosed:
            self._end("the browser closed the view")
        except RfbRefused as exc:
            self.ws.close(1008)
            self._end(f"refused: {exc}")
        except OSError as exc:
            self.ws.close(1011)
            self._end(f"the VNC server's connection broke: {exc}")
        finally:
            self.stop()
            screen.join(timeout=5)
        return self.ended or "ended"

    def _to_browser(self) -> None:
        sock = self._sock
        assert sock is not None
        try:
            while data := sock.recv(_CHUNK):
                self.ws.send(data)
            self._end("the VNC server closed the connection")
        except (OSError, WebSocketClosed) as exc:
            self._end(f"the screen's stream ended: {exc}")
        self.ws.close(1000)
        # The browser's side waits in receive(): ending its socket's reading ends it.
        with contextlib.suppress(OSError):
            self.ws.sock.shutdown(socket.SHUT_RD)

    def _end(self, why: str) -> str:
        if self.ended is None:
            self.ended = why
        return self.ended

    def stop(self) -> None:
        """End both connections (from any thread)."""
        sock = self._sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        with contextlib.suppress(OSError):
            self.ws.sock.shutdown(socket.SHUT_RDWR)
