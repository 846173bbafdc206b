"""Start the ``website`` service: ``python3 -m osworld_servers.website``.

Environment: ``WEBSITE_PORT`` (80; 0 picks a free one), ``WEBSITE_BIND`` (0.0.0.0). The first line on
stdout is ``website: listening on HOST:PORT``.
"""

from __future__ import annotations

import os

from ..base import Server
from ..state import States
from .app import WebsiteHandler
from .shop import initial_data


def main() -> None:
    bind = os.environ.get("WEBSITE_BIND", "0.0.0.0")
    server = Server((bind, int(os.environ.get("WEBSITE_PORT", "80"))), WebsiteHandler, States("shop", initial_data))
    print(f"website: listening on {bind}:{server.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
