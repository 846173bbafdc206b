"""The X display: screenshots with the pointer drawn in, pointer position, screen and window sizes.

Screenshots are on the hot path of every agent step, so they avoid per-call setup: the screen is
grabbed with Pillow's XCB grabber, the pointer image and position come from one XFixes call on a
connection opened once, and the PNG is written unfiltered at the fastest zlib level.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import struct
import threading
import zlib
from array import array
from dataclasses import dataclass

from PIL import Image, ImageGrab
from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror

from .fields import ApiError

PNG_COMPRESS_LEVEL = 1
MAX_SCALED_SIDE = 8192  # a scaled screenshot's sides: no request makes the guest allocate more


@dataclass(frozen=True)
class Pointer:
    x: int
    y: int
    image: Image.Image | None  # RGBA
    hot_x: int
    hot_y: int


class _XFixesCursorImage(ctypes.Structure):
    _fields_ = [
        ("x", ctypes.c_short),
        ("y", ctypes.c_short),
        ("width", ctypes.c_ushort),
        ("height", ctypes.c_ushort),
        ("xhot", ctypes.c_ushort),
        ("yhot", ctypes.c_ushort),
        ("cursor_serial", ctypes.c_ulong),
        ("pixels", ctypes.POINTER(ctypes.c_ulong)),  # ARGB, one per C long
        ("atom", ctypes.c_ulong),
        ("name", ctypes.c_char_p),
    ]


# libX11's handlers of a lost connection: both are called, in this order, and the defaults exit the
# process. Handlers that return let the call in flight fail instead (libX11 1.7 and later).
_IOErrorHandler = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_IOErrorExitHandler = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class _PointerSource:
    """The pointer's image and position through libXfixes, on one connection behind a lock.

    The X server may go away under it (its supervisor restarts a killed Xvfb): the connection is
    then dropped, never used or closed again, and the read is tried once more on a new one.
    """

    def __init__(self, display_name: str) -> None:
        self._display_name = display_name.encode()
        self._lock = threading.Lock()
        self._xlib = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
        self._xfixes = ctypes.CDLL(ctypes.util.find_library("Xfixes") or "libXfixes.so.3")
        self._xlib.XOpenDisplay.restype = ctypes.c_void_p
        self._xlib.XOpenDisplay.argtypes = [ctypes.c_char_p]
        self._xlib.XFree.argtypes = [ctypes.c_void_p]
        self._xlib.XCloseDisplay.argtypes = [ctypes.c_void_p]
        self._xfixes.XFixesGetCursorImage.restype = ctypes.POINTER(_XFixesCursorImage)
        self._xfixes.XFixesGetCursorImage.argtypes = [ctypes.c_void_p]
        self._connection: int | None = None
        self._cache: tuple[int, Image.Image] | None = None  # (cursor serial, image)
        self._lost = False  # set by the handlers below while a call is in flight
        # Kept referenced: libX11 calls them for as long as the process lives.
        self._on_io_error = _IOErrorHandler(self._io_error)
        self._on_io_error_exit = _IOErrorExitHandler(self._io_error_exit)
        self._survives_loss = hasattr(self._xlib, "XSetIOErrorExitHandler")
        if self._survives_loss:
            self._xlib.XSetIOErrorHandler.argtypes = [_IOErrorHandler]
            self._xlib.XSetIOErrorHandler(self._on_io_error)
            self._xlib.XSetIOErrorExitHandler.argtypes = [ctypes.c_void_p, _IOErrorExitHandler, ctypes.c_void_p]

    def _io_error(self, _display: int) -> int:
        self._lost = True
        return 0

    def _io_error_exit(self, _display: int, _data: int) -> None:
        self._lost = True

    def _connect(self) -> int:
        connection = self._xlib.XOpenDisplay(self._display_name)
        if not connection:
            raise ApiError(503, f"cannot open X display {self._display_name.decode()}")
        if self._survives_loss:
            self._xlib.XSetIOErrorExitHandler(connection, self._on_io_error_exit, None)
        return int(connection)

    def read(self) -> Pointer:
        with self._lock:
            for attempt in (1, 2):
                if self._connection is None:
                    self._connection = self._connect()
                self._lost = False
                found = self._xfixes.XFixesGetCursorImage(self._connection)
                if not self._lost:
                    break
                if found:
                    self._xlib.XFree(found)
                self._connection = None  # the X server went away: this connection is dead
                if attempt == 2:
                    raise ApiError(503, f"the X display {self._display_name.decode()} went away")
            if not found:
                return Pointer(0, 0, None, 0, 0)
            try:
                cursor = found.contents
                return Pointer(cursor.x, cursor.y, self._image(cursor), cursor.xhot, cursor.yhot)
            finally:
                self._xlib.XFree(found)

    def _image(self, cursor: _XFixesCursorImage) -> Image.Image | None:
        # The same cursor shape (serial) is converted once.
        if self._cache is not None and self._cache[0] == cursor.cursor_serial:
            return self._cache[1]
        count = cursor.width * cursor.height
        if count == 0:
            return None
        longs = ctypes.cast(cursor.pixels, ctypes.POINTER(ctypes.c_ulong * count)).contents
        argb = array("I", (value & 0xFFFFFFFF for value in longs))  # little-endian BGRA bytes
        image = Image.frombuffer("RGBA", (cursor.width, cursor.height), argb.tobytes(), "raw", "BGRA", 0, 1)
        self._cache = (cursor.cursor_serial, image)
        return image


_pointer_source: _PointerSource | None = None
_pointer_source_lock = threading.Lock()


def display_name() -> str:
    return os.environ.get("DISPLAY", ":0")


def _pointer() -> Pointer:
    global _pointer_source
    with _pointer_source_lock:
        if _pointer_source is None:
            _pointer_source = _PointerSource(display_name())
    return _pointer_source.read()


def screenshot_png() -> bytes:
    """The whole screen as PNG, with the pointer drawn where it is."""
    return encode_png(_screen())


def screenshots_png(size: tuple[int, int]) -> tuple[bytes, bytes]:
    """The whole screen as PNG and, from the same grab, scaled to ``size``: a runner whose model sees a
    smaller screenshot gets it without scaling on the machine that runs every episode's runner."""
    if not (0 < size[0] <= MAX_SCALED_SIDE and 0 < size[1] <= MAX_SCALED_SIDE):
        raise ApiError(400, f"a scaled screenshot is 1 to {MAX_SCALED_SIDE} pixels a side, not {size[0]}x{size[1]}")
    screen = _screen()
    full = encode_png(screen)
    if screen.size == size:
        return full, full
    return full, encode_png(screen.resize(size, Image.Resampling.BILINEAR))


def _screen() -> Image.Image:
    """The screen as RGB, with the pointer drawn where it is."""
    try:
        screen = ImageGrab.grab(xdisplay=display_name())
    except OSError as exc:
        raise ApiError(503, f"cannot grab the X display {display_name()}: {exc}") from None
    if screen.mode != "RGB":
        screen = screen.convert("RGB")
    pointer = _pointer()
    if pointer.image is not None:
        screen.paste(
            pointer.image,
            (pointer.x - pointer.hot_x, pointer.y - pointer.hot_y),
            pointer.image,
        )
    return screen


def encode_png(image: Image.Image) -> bytes:
    """An RGB image as PNG, unfiltered and deflated at level 1.

    Pillow's encoder picks a filter per row, which costs ~50 ms at 1920x1080; without filters
    and at zlib level 1 it is ~15 ms, for files ~25% larger (desktops compress well anyway).
    """
    if image.mode != "RGB":
        image = image.convert("RGB")
    width, height = image.size
    raw = memoryview(image.tobytes())
    stride = width * 3
    filter_none = b"\x00"
    scanlines = b"".join(
        part for row in range(height) for part in (filter_none, raw[row * stride : (row + 1) * stride])
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB, no interlace
    return b"".join(
        (
            b"\x89PNG\r\n\x1a\n",
            _png_chunk(b"IHDR", header),
            _png_chunk(b"IDAT", zlib.compress(scanlines, PNG_COMPRESS_LEVEL)),
            _png_chunk(b"IEND", b""),
        )
    )


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def pointer_position() -> tuple[int, int]:
    pointer = _pointer()
    return pointer.x, pointer.y


def _open_display() -> xdisplay.Display:
    # A fresh connection per call sees the current screen size after a resize (xrandr).
    try:
        return xdisplay.Display(display_name())
    except (xerror.DisplayError, xerror.ConnectionClosedError) as exc:
        raise ApiError(503, f"cannot open X display {display_name()}: {exc}") from None


def screen_size() -> tuple[int, int]:
    connection = _open_display()
    try:
        screen = connection.screen()
        return screen.width_in_pixels, screen.height_in_pixels
    finally:
        connection.close()


def window_size(class_name: str) -> tuple[int, int] | None:
    """Size of the first managed window whose WM_CLASS matches (case-insensitively)."""
    wanted = class_name.lower()
    connection = _open_display()
    try:
        root = connection.screen().root
        clients = root.get_full_property(connection.intern_atom("_NET_CLIENT_LIST"), X.AnyPropertyType)
        for window_id in clients.value if clients is not None else []:
            window = connection.create_resource_object("window", window_id)
            try:
                classes = window.get_wm_class()
                if classes and wanted in (name.lower() for name in classes):
                    geometry = window.get_geometry()
                    return geometry.width, geometry.height
            except xerror.XError:  # the window went away meanwhile
                continue
        return None
    finally:
        connection.close()
