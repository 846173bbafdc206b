"""Start the ``forge`` service: ``python3 -m osworld_servers.forge``.

Environment: ``FORGE_TOKEN`` (required), ``FORGE_PORT`` (80; 0 picks a free one), ``FORGE_HOST``
(0.0.0.0), ``FORGE_DATA`` (where the repositories live). Once the seed is in place it writes ``forge:
serving on port N`` to stderr. The token is never printed.
"""

from __future__ import annotations

import os
import sys

from ..base import Server
from .app import ForgeHandler
from .config import Config
from .seed import seed
from .state import Forge


def main() -> None:
    config = Config.from_env(os.environ)
    if not config.token:
        sys.stderr.write("forge: FORGE_TOKEN is not set; the forge needs a token for its API and pushes\n")
        sys.exit(2)
    forge = Forge(config)
    seed(forge)
    server = Server((config.host, config.port), ForgeHandler, forge)
    sys.stderr.write(f"forge: serving on port {server.port}\n")
    sys.stderr.flush()
    server.serve_forever()


if __name__ == "__main__":
    main()
