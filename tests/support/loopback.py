"""A local HTTP server on loopback for the length of a ``with``: a stand-in for a guest, a website or a
state service that a test scripts with its own request handler."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@contextlib.contextmanager
def loopback_http(handler: type[BaseHTTPRequestHandler], *, wait_for_answers: bool = True) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 at a port the kernel picks; its base URL. ``wait_for_answers=False``:
    the end does not wait for requests still being answered (a handler that answers late on purpose)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.block_on_close = wait_for_answers
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
