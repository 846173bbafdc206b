"""The RFB filter reads a VNC client's stream message by message: input is dropped in a read-only view,
let through (and reported first) with input allowed, and a stream it cannot size ends the view."""

from __future__ import annotations

import struct

import pytest

from pytest_osworld.live.rfb import (
    CLIENT_CUT_TEXT,
    CLIENT_FENCE,
    KEY_EVENT,
    POINTER_EVENT,
    SET_DESKTOP_SIZE,
    ClientFilter,
    RfbRefused,
    key_event,
    pointer_event,
)

HANDSHAKE = b"RFB 003.008\n" + bytes([1]) + bytes([1])  # version, security None, ClientInit (shared)
PIXEL_FORMAT = bytes([0, 0, 0, 0]) + bytes(16)
ENCODINGS = struct.pack(">BxH", 2, 3) + struct.pack(">iii", 0, 1, -223)
UPDATE_REQUEST = struct.pack(">BBHHHH", 3, 0, 0, 0, 1920, 1080)
CUT_TEXT = struct.pack(">BxxxI", CLIENT_CUT_TEXT, 5) + b"hello"
EXTENDED_CUT_TEXT = struct.pack(">Bxxxi", CLIENT_CUT_TEXT, -8) + bytes(8)
FENCE = struct.pack(">BxxxIB", CLIENT_FENCE, 0, 3) + b"abc"
QEMU_KEY = struct.pack(">BBHII", 255, 0, 1, 0x71, 16)
DESKTOP_SIZE = struct.pack(">BxHHBx", SET_DESKTOP_SIZE, 800, 600, 1) + bytes(16)
XVP = bytes([250, 0, 1, 2])
CONTINUOUS = struct.pack(">BBHHHH", 150, 1, 0, 0, 10, 10)
NOT_INPUT = PIXEL_FORMAT + ENCODINGS + UPDATE_REQUEST + FENCE + CONTINUOUS
INPUT = [
    key_event(0x71, down=True),
    key_event(0x71, down=False),
    pointer_event(10, 20, 1),
    CUT_TEXT,
    EXTENDED_CUT_TEXT,
    QEMU_KEY,
    DESKTOP_SIZE,
    XVP,
]


def feed_bytewise(client: ClientFilter, data: bytes) -> bytes:
    """A stream cut anywhere: one byte at a time."""
    return b"".join(client.feed(data[i : i + 1]) for i in range(len(data)))


def test_a_read_only_view_drops_every_input_message_and_passes_the_rest() -> None:
    dropped: list[int] = []
    client = ClientFilter(allow_input=False, on_drop=dropped.append)
    stream = HANDSHAKE + PIXEL_FORMAT + b"".join(INPUT) + ENCODINGS + key_event(0x61, down=True) + UPDATE_REQUEST
    forwarded = client.feed(stream[:5]) + client.feed(stream[5:])
    assert forwarded == HANDSHAKE + PIXEL_FORMAT + ENCODINGS + UPDATE_REQUEST
    assert client.dropped == len(INPUT) + 1 and client.sent == 0
    assert dropped == [m[0] for m in INPUT] + [KEY_EVENT]


def test_messages_cut_anywhere_are_read_whole() -> None:
    client = ClientFilter(allow_input=False)
    stream = HANDSHAKE + b"".join(INPUT) + NOT_INPUT
    assert feed_bytewise(client, stream) == HANDSHAKE + NOT_INPUT
    assert client.dropped == len(INPUT)


def test_with_input_allowed_each_input_message_is_reported_before_it_is_let_through() -> None:
    reported: list[int] = []
    client = ClientFilter(allow_input=True, on_input=reported.append)
    assert client.feed(HANDSHAKE) == HANDSHAKE
    assert reported == []
    message = key_event(0x71, down=True)
    assert client.feed(message + UPDATE_REQUEST) == message + UPDATE_REQUEST
    assert reported == [KEY_EVENT] and client.sent == 1
    assert client.feed(pointer_event(1, 2)) == pointer_event(1, 2)
    assert reported == [KEY_EVENT, POINTER_EVENT]


def test_the_handshake_with_a_vnc_password_passes_its_answer_unread() -> None:
    client = ClientFilter(allow_input=False)
    # The 16-byte answer holds a 4 and a 5: read as messages they would be input and be dropped.
    answer = bytes([4, 5] * 8)
    stream = b"RFB 003.007\n" + bytes([2]) + answer + bytes([1]) + key_event(0x61, down=True) + UPDATE_REQUEST
    assert client.feed(stream) == stream[: -len(UPDATE_REQUEST) - 8] + UPDATE_REQUEST


@pytest.mark.parametrize(
    ("stream", "why"),
    [
        (b"RFB 003.003\n", "RFB 3.7 and 3.8 only"),
        (b"RFB 003.008\n" + bytes([19]), "security type 19"),
        (HANDSHAKE + bytes([99, 0, 0, 0]), "client message type 99"),
        (HANDSHAKE + bytes([255, 1, 0, 0]), "QEMU client message of subtype 1"),
    ],
)
def test_a_stream_the_filter_cannot_size_ends_the_view(stream: bytes, why: str) -> None:
    with pytest.raises(RfbRefused, match=why):
        ClientFilter(allow_input=False).feed(stream)
