"""The proxy's settings that hold secrets (the upstream proxy, the clients' credentials), and the
failure to reach a host, worded without addresses or values."""

from __future__ import annotations

import base64
import socket
from urllib.parse import unquote, urlsplit

UPSTREAM_ENV = "OSWORLD_PROXY_UPSTREAM"
CREDENTIALS_ENV = "PROXY_CREDENTIALS"
CONNECT_TIMEOUT = 15.0  # seconds to reach a host, or the upstream proxy


class ProxyFailure(Exception):
    """A host (or the upstream proxy) could not be reached: ``status`` is what the client is answered."""

    def __init__(self, status: int, outcome: str, error: str) -> None:
        super().__init__(error)
        self.status = status
        self.outcome = outcome
        self.error = error


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


class Upstream:
    """The proxy every request goes through. Its URL is kept whole nowhere: only host, port, header."""

    def __init__(self, url: str) -> None:
        try:
            parts = urlsplit(url.strip())
            port = parts.port or 80
        except ValueError:
            parts, port = urlsplit(""), 0
        if parts.scheme != "http" or not parts.hostname or not port:
            # Never the value: it holds a password.
            raise ValueError(f"{UPSTREAM_ENV} is not an http://[user:password@]host:port URL")
        self.host: str = parts.hostname
        self.port: int = port
        self.authorization = (
            basic(unquote(parts.username), unquote(parts.password or "")) if parts.username is not None else None
        )

    def headers(self) -> dict[str, str]:
        return {"Proxy-Authorization": self.authorization} if self.authorization else {}

    def connect(self) -> socket.socket:
        try:
            return socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise ProxyFailure(502, "unreachable", "the upstream proxy: " + why(exc)) from None


def why(exc: BaseException) -> str:
    """A connection error in a few words, without addresses or values."""
    if isinstance(exc, socket.gaierror):
        return "name not resolved"
    if isinstance(exc, TimeoutError | socket.timeout):
        return "timed out"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, ConnectionResetError):
        return "connection reset"
    return type(exc).__name__


def unreachable(exc: BaseException, *, upstream: bool) -> ProxyFailure:
    """The failure of a connection to a host (or to the upstream proxy): 504 on a timeout, else 502."""
    where = "the upstream proxy: " if upstream else ""
    status = 504 if isinstance(exc, TimeoutError | socket.timeout) else 502
    return ProxyFailure(status, "unreachable", where + why(exc))


def credentials(value: str | None) -> str | None:
    """The ``Proxy-Authorization`` value clients must send, from ``user:password``; None when unset."""
    if not value:
        return None
    user, sep, password = value.partition(":")
    if not sep:
        raise ValueError(f"{CREDENTIALS_ENV} is not user:password")
    return basic(user, password)
