"""``CONNECT`` tunnels: the connection to the host (through the upstream proxy, if any), then bytes
copied both ways until both sides are done."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable

from .upstream import CONNECT_TIMEOUT, ProxyFailure, Upstream, unreachable, why

CHUNK = 65536


def tunnel_to(upstream: Upstream | None, host: str, port: int) -> tuple[socket.socket, bytes]:
    """A connection to ``host:port`` (through ``upstream``, if any), and bytes it already sent."""
    if upstream is None:
        try:
            return socket.create_connection((host, port), timeout=CONNECT_TIMEOUT), b""
        except OSError as exc:
            raise unreachable(exc, upstream=False) from None
    remote = upstream.connect()
    lines = [f"CONNECT {host}:{port} HTTP/1.1", f"Host: {host}:{port}"]
    lines += [f"{k}: {v}" for k, v in upstream.headers().items()]
    try:
        remote.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            data = remote.recv(4096)
            if not data:
                break
            head += data
    except OSError as exc:
        remote.close()
        raise ProxyFailure(502, "unreachable", "the upstream proxy: " + why(exc)) from None
    fields = head.split(b"\r\n", 1)[0].split()
    status = int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else 0
    if status != 200:
        remote.close()
        reason = "refused the credentials" if status == 407 else f"answered {status or 'nothing'}"
        raise ProxyFailure(502, "refused", f"the upstream proxy {reason} to CONNECT")
    # Bytes after the head belong to the tunnel (none before the client speaks, as a rule).
    return remote, head.split(b"\r\n\r\n", 1)[1]


def relay(read_client: Callable[[int], bytes], client: socket.socket, remote: socket.socket) -> None:
    """Copy bytes both ways until both sides are done; one side's end is passed on to the other."""
    remote.settimeout(None)

    def upward() -> None:
        try:
            while data := read_client(CHUNK):  # the client's buffered reader: nothing it sent is lost
                remote.sendall(data)
            remote.shutdown(socket.SHUT_WR)
        except OSError:
            _close(remote)
            _close(client)

    thread = threading.Thread(target=upward, daemon=True)
    thread.start()
    try:
        while data := remote.recv(CHUNK):
            client.sendall(data)
        client.shutdown(socket.SHUT_WR)
    except OSError:
        _close(remote)
        _close(client)
    thread.join()
    remote.close()


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
