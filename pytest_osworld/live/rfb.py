"""The client-to-server half of the RFB protocol (RFC 6143), read message by message, so that a view
can be read-only whatever the browser sends.

Every byte a VNC client sends passes through :class:`ClientFilter`: the handshake (the protocol
version, the security type, a VNC password's answer, ClientInit), then the client messages. Input
messages (KeyEvent, PointerEvent, ClientCutText, QEMU's extended key event, a desktop resize, xvp's
power operations) are dropped in a read-only view; with input allowed they pass, and the first one
is reported before it is let through. Anything the filter cannot size (another security type, an
unknown message) ends the connection: a filter that cannot read the stream cannot keep it read-only.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

# Client message types (RFC 6143 7.5; extensions as registered with IANA)
SET_PIXEL_FORMAT = 0
SET_ENCODINGS = 2
FRAMEBUFFER_UPDATE_REQUEST = 3
KEY_EVENT = 4
POINTER_EVENT = 5
CLIENT_CUT_TEXT = 6
ENABLE_CONTINUOUS_UPDATES = 150
CLIENT_FENCE = 248
XVP = 250
SET_DESKTOP_SIZE = 251
QEMU = 255
QEMU_EXTENDED_KEY = 0

SECURITY_NONE = 1
SECURITY_VNC = 2
INPUT_TYPES = frozenset({KEY_EVENT, POINTER_EVENT, CLIENT_CUT_TEXT, XVP, SET_DESKTOP_SIZE})


class RfbRefused(Exception):
    """The client's stream has something the filter cannot size: the connection must end."""


class ClientFilter:
    """Feeds on the client's bytes; returns the bytes to send on to the VNC server.

    ``allow_input``: input messages pass (``on_input`` is called with the message type before each one
    is returned); otherwise they are dropped, counted in ``dropped`` and told to ``on_drop``.
    """

    def __init__(
        self,
        *,
        allow_input: bool,
        on_input: Callable[[int], None] | None = None,
        on_drop: Callable[[int], None] | None = None,
    ) -> None:
        self.allow_input = allow_input
        self.on_input = on_input
        self.on_drop = on_drop
        self.dropped = 0
        self.sent = 0
        self._buffer = b""
        self._stage = "version"

    def feed(self, data: bytes) -> bytes:
        self._buffer += data
        out = bytearray()
        while True:
            size = self._next_size()
            if size is None or len(self._buffer) < size:
                return bytes(out)
            message, self._buffer = self._buffer[:size], self._buffer[size:]
            out += self._pass(message)

    def _pass(self, message: bytes) -> bytes:
        if self._stage != "messages":
            self._advance(message)
            return message
        if not _is_input(message):
            return message
        if not self.allow_input:
            self.dropped += 1
            if self.on_drop is not None:
                self.on_drop(message[0])
            return b""
        self.sent += 1
        if self.on_input is not None:
            self.on_input(message[0])
        return message

    def _advance(self, message: bytes) -> None:
        """The handshake, one client part at a time (RFB 3.7 and 3.8; 3.3 lets the server pick the
        security type unseen by this side, so it is refused)."""
        if self._stage == "version":
            if message not in (b"RFB 003.008\n", b"RFB 003.007\n"):
                raise RfbRefused(f"the client speaks {message!r}; the live view reads RFB 3.7 and 3.8 only")
            self._stage = "security"
        elif self._stage == "security":
            if message[0] == SECURITY_NONE:
                self._stage = "init"
            elif message[0] == SECURITY_VNC:
                self._stage = "vnc-auth"
            else:
                raise RfbRefused(f"security type {message[0]}: the live view reads None and VNC password only")
        elif self._stage == "vnc-auth":
            self._stage = "init"
        elif self._stage == "init":
            self._stage = "messages"

    def _next_size(self) -> int | None:
        """The size of the next whole part of the stream, or None until enough of it has come to say."""
        buffer = self._buffer
        stage = self._stage
        if stage == "version":
            return 12
        if stage in ("security", "init"):
            return 1
        if stage == "vnc-auth":
            return 16
        if not buffer:
            return None
        kind = buffer[0]
        fixed = {
            SET_PIXEL_FORMAT: 20,
            FRAMEBUFFER_UPDATE_REQUEST: 10,
            KEY_EVENT: 8,
            POINTER_EVENT: 6,
            ENABLE_CONTINUOUS_UPDATES: 10,
            XVP: 4,
        }.get(kind)
        if fixed is not None:
            return fixed
        if kind == SET_ENCODINGS:
            return None if len(buffer) < 4 else 4 + 4 * struct.unpack_from(">H", buffer, 2)[0]
        if kind == CLIENT_CUT_TEXT:
            # A negative length is the extended clipboard's: its payload is the length's absolute value.
            return None if len(buffer) < 8 else 8 + abs(struct.unpack_from(">i", buffer, 4)[0])
        if kind == CLIENT_FENCE:
            return None if len(buffer) < 9 else 9 + buffer[8]
        if kind == SET_DESKTOP_SIZE:
            return None if len(buffer) < 8 else 8 + 16 * buffer[6]
        if kind == QEMU:
            if len(buffer) < 2:
                return None
            if buffer[1] == QEMU_EXTENDED_KEY:
                return 12
            raise RfbRefused(f"QEMU client message of subtype {buffer[1]}")
        raise RfbRefused(f"client message type {kind}")


def _is_input(message: bytes) -> bool:
    kind = message[0]
    return kind in INPUT_TYPES or (kind == QEMU and message[1] == QEMU_EXTENDED_KEY)


def key_event(keysym: int, *, down: bool) -> bytes:
    """A KeyEvent message (for tests and tools)."""
    return struct.pack(">BBxxI", KEY_EVENT, 1 if down else 0, keysym)


def pointer_event(x: int, y: int, buttons: int = 0) -> bytes:
    return struct.pack(">BBHH", POINTER_EVENT, buttons, x, y)
