"""The ``echo`` service: a small HTTP server of the project's own, run by python3 inside a container.

It speaks the state protocol of OSWorld-V2's mock websites in miniature, so tasks and tests can use
a real shared service without a registry: ``GET /health``; ``GET|PUT|DELETE /api/state?cookie=ID``
(state kept per cookie: PUT replaces, DELETE resets); ``POST /reset`` (forget every cookie);
``GET /echo`` (the request's path, query and Host header back as JSON); ``POST /exit`` (the server
stops: a service dying mid-task, on purpose). ``ECHO_PORT`` says where it listens (8000).

Run as ``python3 -m osworld_servers.echo``; standard library only.
"""

from __future__ import annotations

import json
import os
import threading
from typing import Any
from urllib.parse import urlsplit

from .base import Handler, Server


class Cookies:
    """The state of each cookie, as last PUT."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[str, Any] = {}


class EchoHandler(Handler[Cookies]):
    log_name = "echo"

    def _json_body(self) -> Any:
        return json.loads(self.read_body() or b"null")

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        if parts.path == "/health":
            return self.send_json(200, {"status": "ok"})
        if parts.path == "/echo":
            return self.send_json(200, {"path": parts.path, "query": parts.query, "host": self.headers.get("Host")})
        if parts.path == "/api/state":
            cookie = self.query_value("cookie")
            if cookie is None:
                return self.send_json(400, {"error": "cookie is missing"})
            with self.app.lock:
                return self.send_json(200, {"user_id": cookie, "state": self.app.states.get(cookie, {})})
        return self.send_json(404, {"error": f"no route {parts.path}"})

    def do_PUT(self) -> None:
        cookie = self.query_value("cookie")
        if urlsplit(self.path).path != "/api/state" or cookie is None:
            return self.send_json(404, {"error": "PUT /api/state?cookie=ID"})
        body = self._json_body()
        with self.app.lock:
            self.app.states[cookie] = body
        return self.send_json(200, {"user_id": cookie, "state": body})

    def do_DELETE(self) -> None:
        cookie = self.query_value("cookie")
        if urlsplit(self.path).path != "/api/state" or cookie is None:
            return self.send_json(404, {"error": "DELETE /api/state?cookie=ID"})
        with self.app.lock:
            self.app.states.pop(cookie, None)
        return self.send_json(200, {"user_id": cookie, "state": {}})

    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path == "/reset":
            with self.app.lock:
                self.app.states.clear()
            return self.send_json(200, {"reset": True})
        if path == "/exit":
            self.send_json(200, {"exiting": True})
            self.wfile.flush()
            os._exit(3)
        return self.send_json(404, {"error": f"no route {path}"})


def main() -> None:
    port = int(os.environ.get("ECHO_PORT", "8000"))
    Server(("0.0.0.0", port), EchoHandler, Cookies()).serve_forever()


if __name__ == "__main__":
    main()
