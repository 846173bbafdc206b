"""The server side of a WebSocket (RFC 6455), as much as the watch view's bridge needs: the opening
handshake's answer, binary and text messages (fragmented or not), ping, pong and close.

Written here rather than taken from a library: the live page's HTTP server is the standard library's,
which hands over the socket after reading the request, and the bridge needs only this much of the
protocol. The tests speak to it with ``websocket-client`` (a dependency already) and with Chromium.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import socket
import struct
import threading
from typing import BinaryIO

_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE = 1 << 20  # a VNC client's messages are small; anything larger is not one


class WebSocketClosed(Exception):
    """The peer closed the connection, or broke the protocol (then the connection is closed)."""


def accept_key(key: str) -> str:
    """``Sec-WebSocket-Accept`` for a client's ``Sec-WebSocket-Key``."""
    return base64.b64encode(hashlib.sha1(key.encode("ascii") + _GUID).digest()).decode("ascii")


def valid_key(key: str | None) -> bool:
    try:
        return key is not None and len(base64.b64decode(key, validate=True)) == 16
    except ValueError:
        return False


def _frame(opcode: int, payload: bytes) -> bytes:
    head = bytes([0x80 | opcode])
    size = len(payload)
    if size < 126:
        head += bytes([size])
    elif size < 1 << 16:
        head += bytes([126]) + struct.pack(">H", size)
    else:
        head += bytes([127]) + struct.pack(">Q", size)
    return head + payload


class WebSocket:
    """A handshaken connection, server side. ``send`` may be called from another thread than ``receive``."""

    def __init__(self, sock: socket.socket, reader: BinaryIO | None = None) -> None:
        # ``reader``: the HTTP server's buffered reader of the socket, which may hold bytes already read
        self.sock = sock
        self._reader = reader
        self._send_lock = threading.Lock()
        self.closed = False

    def _read(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            try:
                chunk = self._reader.read(size - len(data)) if self._reader else self.sock.recv(size - len(data))
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                raise WebSocketClosed("the connection ended")
            data += chunk
        return data

    def _frame_in(self) -> tuple[bool, int, bytes]:
        first, second = self._read(2)
        fin, opcode = bool(first & 0x80), first & 0x0F
        if first & 0x70:
            self._fail(1002, "reserved bits set")
        if not second & 0x80:
            self._fail(1002, "a client's frame must be masked")
        size = second & 0x7F
        if size == 126:
            size = struct.unpack(">H", self._read(2))[0]
        elif size == 127:
            size = struct.unpack(">Q", self._read(8))[0]
        if size > MAX_MESSAGE:
            self._fail(1009, "message too large")
        mask = self._read(4)
        data = self._read(size)
        keys = (mask * (size // 4 + 1))[:size]
        return fin, opcode, (int.from_bytes(data, "big") ^ int.from_bytes(keys, "big")).to_bytes(size, "big")

    def receive(self) -> bytes:
        """The next data message (text as its UTF-8 bytes); answers pings on the way. Raises
        :class:`WebSocketClosed` when the peer closes."""
        parts: list[bytes] = []
        while True:
            fin, opcode, payload = self._frame_in()
            if opcode == CLOSE:
                self.close(struct.unpack(">H", payload[:2])[0] if len(payload) >= 2 else 1000)
                raise WebSocketClosed("the peer closed the connection")
            if opcode == PING:
                self._send(PONG, payload[:125])
                continue
            if opcode == PONG:
                continue
            if opcode not in (CONTINUATION, TEXT, BINARY) or (opcode == CONTINUATION) != bool(parts):
                self._fail(1002, f"unexpected frame opcode {opcode}")
            parts.append(payload)
            if sum(len(p) for p in parts) > MAX_MESSAGE:
                self._fail(1009, "message too large")
            if fin:
                return b"".join(parts)

    def _fail(self, code: int, why: str) -> None:
        self.close(code)
        raise WebSocketClosed(why)

    def _send(self, opcode: int, payload: bytes) -> None:
        with self._send_lock:
            if self.closed and opcode != CLOSE:
                raise WebSocketClosed("the connection is closed")
            try:
                self.sock.sendall(_frame(opcode, payload))
            except OSError as exc:
                self.closed = True
                raise WebSocketClosed(str(exc)) from None

    def send(self, data: bytes) -> None:
        self._send(BINARY, data)

    def close(self, code: int = 1000) -> None:
        """Send a close frame once (best effort); the caller then drops the socket."""
        if self.closed:
            return
        with contextlib.suppress(WebSocketClosed):
            self._send(CLOSE, struct.pack(">H", code if code != 1005 else 1000))
        self.closed = True
