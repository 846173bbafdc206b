"""The services that ship with the package: a table of declarations.

Each runs a server of ``pytest_osworld/servers`` on the desktop image's python3 (``build: desktop``),
so services can be used and tested where no registry is reachable: ``echo``, a small HTTP server;
``website``, a mock web shop; ``proxy``, a recording forward proxy; ``forge``, a code forge
(docs/services.md). The image holds the servers' package (``guest/build.py``); a declaration names the
module its container starts (``python3 -m osworld_servers.<module>``), its ports, probe and reset.
A profile adjusts any key of them, its own ``entrypoint`` or ``command`` included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_osworld.servers import image_command
from pytest_osworld.services.declaration import HttpReset, Probe, Reset, Service, merge

_DECLARATIONS = [
    Service(
        name="echo",
        build="desktop",
        entrypoint=image_command("echo"),
        env={"ECHO_PORT": "8000"},
        ports=[8000],
        readiness=Probe(path="/health", deadline=30.0),
        reset=Reset(http=HttpReset(method="POST", path="/reset")),
        description="a small HTTP server of the project's (state per cookie, /echo, /reset, /exit)",
    ),
    # Shared by concurrent tasks: each keeps its own state under its own cookie, so nothing is reset.
    Service(
        name="website",
        build="desktop",
        entrypoint=image_command("website"),
        env={"WEBSITE_PORT": "80"},
        ports=[80],
        aliases=["shop"],
        readiness=Probe(path="/api/state?cookie=readycheck", deadline=30.0),
        reset=Reset(state_key="cookie"),
        description="a mock web shop of the project's (catalogue, cart, checkout; OSWorld-V2's state protocol)",
    ),
    # Tasks share it, each recorded under its own key. OSWORLD_PROXY_UPSTREAM goes in by name only: its
    # value (with a password) stays out of the definition.
    Service(
        name="proxy",
        build="desktop",
        entrypoint=image_command("proxy"),
        env={"PROXY_PORT": "3128"},
        pass_env=["OSWORLD_PROXY_UPSTREAM"],
        ports=[3128],
        readiness=Probe(path="/health", deadline=30.0),
        reset=Reset(state_key="cookie"),
        description="a recording forward proxy of the project's (what each task's sandbox reached)",
    ),
    # Behind the run's token; held by one task at a time and reset to its seed before each (its reset
    # needs the token too).
    Service(
        name="forge",
        build="desktop",
        entrypoint=image_command("forge"),
        env={"FORGE_PORT": "80"},
        token_env="FORGE_TOKEN",
        ports=[80],
        readiness=Probe(path="/health", deadline=60.0),
        reset=Reset(http=HttpReset(method="POST", path="/api/reset", headers={"PRIVATE-TOKEN": "{token}"})),
        exclusive=True,
        description="a code forge of the project's (git over HTTP, a subset of GitLab's REST API v4)",
    ),
]

BUILTIN: dict[str, Service] = {service.name: service for service in _DECLARATIONS}


def check_entries(entries: Mapping[str, Any]) -> None:
    """Validate the profile's ``services:`` entries against the built-in services; raises ServiceConfigError."""
    merge(BUILTIN, entries)
