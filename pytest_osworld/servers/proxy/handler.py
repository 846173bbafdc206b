"""The proxy's requests: its control API (origin form), plain HTTP forwarded (absolute form) and
``CONNECT`` tunnels, each recorded under the key of the address it comes from."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from http.client import HTTPConnection, HTTPException, HTTPResponse
from typing import Any
from urllib.parse import SplitResult, urlsplit

from ..base import Handler
from .records import Records
from .tunnel import CHUNK, relay, tunnel_to
from .upstream import CONNECT_TIMEOUT, ProxyFailure, Upstream, unreachable

ANSWER_TIMEOUT = 120.0  # seconds a forwarded request's answer may take to begin
# Headers about one connection, not the request: never passed on (RFC 9110 7.6.1).
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


@dataclass
class Proxy:
    """The running proxy: its records, the upstream proxy (if any), the credentials clients must send."""

    records: Records = field(default_factory=Records)
    upstream: Upstream | None = None
    credentials: str | None = None  # the Proxy-Authorization value clients must send, when set


class ProxyHandler(Handler[Proxy]):
    protocol_version = "HTTP/1.1"  # keep-alive: a browser sends many requests on one connection
    server_version = "osworld-proxy"
    disable_nagle_algorithm = True  # headers and body go out as separate writes: no 40 ms stall between them

    # --- answers of the proxy itself
    def _control(self) -> None:
        self.read_body()  # read, so the connection stays usable
        route = (self.command, urlsplit(self.path).path)
        if route in (("GET", "/health"), ("HEAD", "/health")):
            return self.send_json(200, {"status": "ok", "upstream": self.app.upstream is not None})
        if route == ("POST", "/reset"):
            self.app.records.reset()
            return self.send_json(200, {"reset": True})
        if route not in (("GET", "/api/register"), ("GET", "/api/state"), ("DELETE", "/api/state")):
            return self.send_json(404, {"error": f"no route {route[0]} {route[1]}"})
        key = self.query_value("cookie")
        if not key:
            return self.send_json(400, {"error": "cookie is missing: ?cookie=KEY"})
        if route[1] == "/api/register":
            self.app.records.register(self.client_address[0], key)
            return self.send_json(200, {"user_id": key, "registered": self.client_address[0]})
        if self.command == "DELETE":
            self.app.records.forget(key)
        return self.send_json(200, {"user_id": key, "state": self.app.records.state(key)})

    # --- proxying
    def _allowed(self) -> bool:
        if self.app.credentials is None or self.headers.get("Proxy-Authorization", "") == self.app.credentials:
            return True
        self.read_body()
        self.send_json(407, {"error": "proxy credentials needed"}, {"Proxy-Authenticate": 'Basic realm="proxy"'})
        return False

    def _record(self, host: str, port: int, path: str | None, status: int, outcome: str, error: str = "") -> None:
        entry: dict[str, Any] = {
            "method": self.command,
            "host": host,
            "port": port,
            "path": path,
            "status": status,
            "outcome": outcome,
        }
        if error:
            entry["error"] = error
        self.app.records.add(self.client_address[0], entry)

    def _fail(self, host: str, port: int, path: str | None, failure: ProxyFailure) -> None:
        self._record(host, port, path, failure.status, failure.outcome, failure.error)
        self.close_connection = True
        self.send_json(failure.status, {"error": failure.error}, {"Connection": "close"})

    def _dispatch(self) -> None:
        if self.path.startswith("/"):
            return self._control()
        if not self._allowed():
            return None
        try:
            parts = urlsplit(self.path)
            port = parts.port or 80
        except ValueError:
            parts, port = urlsplit(""), 0
        if parts.scheme != "http" or not parts.hostname or not port:
            self.read_body()
            return self.send_json(400, {"error": "a proxied request names an http:// URL (https goes by CONNECT)"})
        return self._forward(parts, parts.hostname.lower(), port)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _dispatch

    def _open(self, parts: SplitResult, host: str, port: int) -> tuple[HTTPConnection, str, dict[str, str]]:
        """A connection for the request: to the host, or to the upstream proxy (absolute target, credentials)."""
        path = parts.path or "/"
        target = path + (f"?{parts.query}" if parts.query else "")
        authority = host if port == 80 else f"{host}:{port}"
        extra: dict[str, str] = {}
        upstream = self.app.upstream
        if upstream is not None:
            connection = HTTPConnection(upstream.host, upstream.port, timeout=CONNECT_TIMEOUT)
            target, extra = f"http://{authority}{target}", upstream.headers()
        else:
            connection = HTTPConnection(host, port, timeout=CONNECT_TIMEOUT)
        try:
            connection.connect()
        except OSError as exc:
            raise unreachable(exc, upstream=upstream is not None) from None
        if connection.sock is not None:
            connection.sock.settimeout(ANSWER_TIMEOUT)
        return connection, target, {"Host": authority, **extra}

    def _forward(self, parts: SplitResult, host: str, port: int) -> None:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        body = self.read_body()
        dropped = {h.strip().lower() for h in self.headers.get("Connection", "").split(",")} | HOP_BY_HOP
        headers = {k: v for k, v in self.headers.items() if k.lower() not in dropped and k.lower() != "host"}
        try:
            connection, target, added = self._open(parts, host, port)
            try:
                connection.request(self.command, target, body=body, headers={**headers, **added})
                answer = connection.getresponse()
            except (OSError, HTTPException) as exc:
                raise unreachable(exc, upstream=self.app.upstream is not None) from None
        except ProxyFailure as failure:
            return self._fail(host, port, path, failure)
        try:
            if self.app.upstream is not None and answer.status == 407:
                refused = ProxyFailure(502, "refused", "the upstream proxy refused the credentials (407)")
                return self._fail(host, port, path, refused)
            self._record(host, port, path, answer.status, "answered")
            self._relay_answer(answer)
        finally:
            connection.close()
        return None

    def _relay_answer(self, answer: HTTPResponse) -> None:
        self.send_response_only(answer.status, answer.reason)
        self.log_request(answer.status)
        dropped = {h.strip().lower() for h in (answer.getheader("Connection") or "").split(",")} | HOP_BY_HOP
        for name, value in answer.getheaders():
            if name.lower() not in dropped and name.lower() != "content-length":
                self.send_header(name, value)
        bodiless = self.command == "HEAD" or answer.status in (204, 304) or answer.status < 200
        chunked = False
        if bodiless:
            if answer.getheader("Content-Length") is not None:
                self.send_header("Content-Length", answer.getheader("Content-Length", "0"))
        elif answer.length is not None and not answer.chunked:
            self.send_header("Content-Length", str(answer.length))
        elif self.request_version == "HTTP/1.1":
            self.send_header("Transfer-Encoding", "chunked")
            chunked = True
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if bodiless:
            return
        try:
            while data := answer.read1(CHUNK):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
        except (OSError, HTTPException):
            self.close_connection = True  # either side went away mid-answer: the client sees a cut

    # --- tunnels
    def do_CONNECT(self) -> None:
        if not self._allowed():
            return
        host, _, port_text = self.path.rpartition(":")
        host = host.strip("[]").lower()
        if not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
            self.close_connection = True
            return self.send_json(400, {"error": "CONNECT takes host:port"}, {"Connection": "close"})
        port = int(port_text)
        try:
            remote, early = tunnel_to(self.app.upstream, host, port)
        except ProxyFailure as failure:
            return self._fail(host, port, None, failure)
        self._record(host, port, None, 200, "tunnelled")
        self.send_response(200, "Connection established")
        self.end_headers()
        self.close_connection = True
        if early:
            self.connection.sendall(early)
        relay(self.rfile.read1, self.connection, remote)
        return None

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write("proxy: " + self.client_address[0] + " " + (format % args) + "\n")
