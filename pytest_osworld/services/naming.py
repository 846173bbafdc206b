"""The names and the secrets of a run's shared services: the key of a task in a service's state, the
services' network and containers on an engine, and each service's token for the run.

Pure functions of the run id (and the run's lock folder for the tokens): every process of a run finds
the same names, so the first to need a service starts it and the others attach (``pool.py``).
"""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

NAME_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]+")


def state_key(run_id: str, task_key: str) -> str:
    """A task's key in a service's state: URL-safe, as it goes into query strings and cookies unquoted
    (``<run>-<domain>/<id>#r2`` would lose its repeat to a URL fragment). Every other character is
    written ``~XX`` (its hex), ``~`` too, so distinct tasks keep distinct keys."""
    return re.sub(
        r"[^A-Za-z0-9_.-]", lambda m: "".join(f"~{b:02X}" for b in m.group(0).encode()), f"{run_id}-{task_key}"
    )


def network_name(run_id: str) -> str:
    return f"pytest-osworld-{NAME_UNSAFE.sub('-', run_id)[:40]}-services"


def container_name(run_id: str, service: str) -> str:
    return f"pytest-osworld-{NAME_UNSAFE.sub('-', run_id)[:40]}-svc-{service}"


def run_token(folder: Path, service: str) -> str:
    """A service's secret token for the run: ``OSWORLD_<NAME>_TOKEN`` when set, else a random value made
    by the first process that asks and kept (mode 0600) in the run's lock folder, so every worker of the
    run gets the same one. It is never a constant of the code, and goes nowhere but the container's
    environment, reset headers and ``{SERVICE_TOKEN:name}``."""
    given = os.environ.get(f"OSWORLD_{service.upper().replace('-', '_')}_TOKEN")
    if given:
        return given
    path = folder / f"token-{service}"
    if not path.exists():
        draft = folder / f".token-{service}-{secrets.token_hex(6)}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(20))
        try:
            os.link(draft, path)  # atomic: of two processes racing here, the first one's value stands
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text(encoding="ascii").strip()
