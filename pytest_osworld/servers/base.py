"""What the servers share: an HTTP server that holds the server's state object, a request handler
with bodies, JSON answers and log lines, and the error a handler raises to refuse a request."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar, cast
from urllib.parse import parse_qs, urlsplit

App = TypeVar("App")


class HttpError(Exception):
    """A request the server refuses: the status, and the message the client is shown."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Server(ThreadingHTTPServer, Generic[App]):
    """A threading HTTP server whose handlers reach ``app``, the one state object made at start."""

    daemon_threads = True  # a connection left open never keeps the process from ending

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], app: App) -> None:
        super().__init__(address, handler)
        self.app = app

    @property
    def port(self) -> int:
        return int(self.server_address[1])


class Handler(BaseHTTPRequestHandler, Generic[App]):
    """A request of one of the servers; ``log_name`` prefixes its log lines on stderr."""

    log_name = "server"

    @property
    def app(self) -> App:
        """The server's state object (the same for every request)."""
        return cast("Server[App]", self.server).app

    def query_value(self, name: str) -> str | None:
        """The first ``?name=`` of the request's URL, or None."""
        values = parse_qs(urlsplit(self.path).query).get(name)
        return values[0] if values else None

    def read_body(self) -> bytes | None:
        """The request's body (``Content-Length`` or chunked); None when it declares none."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers, to the empty line (or the end)
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else None

    def send(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        """An answer of the server's own (no body to a HEAD request)."""
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.send(status, json.dumps(body).encode(), "application/json", headers)

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"{self.log_name}: " + (format % args) + "\n")
