"""Start the ``proxy`` service: ``python3 -m osworld_servers.proxy``.

``PROXY_BIND`` (0.0.0.0) and ``PROXY_PORT`` (3128; 0 picks a free one) say where to listen; the first
line on stdout is ``proxy: listening on HOST:PORT``. A malformed ``OSWORLD_PROXY_UPSTREAM`` or
``PROXY_CREDENTIALS`` stops it with exit status 2, naming the variable, never its value.
"""

from __future__ import annotations

import os
import sys

from ..base import Server
from .handler import Proxy, ProxyHandler
from .upstream import CREDENTIALS_ENV, UPSTREAM_ENV, Upstream, credentials


def main() -> int:
    try:
        upstream = Upstream(os.environ[UPSTREAM_ENV]) if os.environ.get(UPSTREAM_ENV, "").strip() else None
        proxy = Proxy(upstream=upstream, credentials=credentials(os.environ.get(CREDENTIALS_ENV)))
    except ValueError as exc:
        sys.stderr.write(f"proxy: {exc}\n")
        return 2
    address = (os.environ.get("PROXY_BIND", "0.0.0.0"), int(os.environ.get("PROXY_PORT", "3128")))
    server = Server(address, ProxyHandler, proxy)
    host, port = server.server_address[:2]
    print(f"proxy: listening on {host!s}:{port}", flush=True)
    server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
