"""What tests of the shared services need more than once: a server of ``pytest_osworld/servers`` run
as its container runs it, in a local process (the website's as a context manager), and a task's
context that reaches only services (its guest is never asked)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import docker

from pytest_osworld.guest.client import GuestClient
from pytest_osworld.sandbox import LABEL_MANAGED, LABEL_RUN_ID, Owner, parse_hosts
from pytest_osworld.servers import IMAGE_PACKAGE
from pytest_osworld.services import BUILTIN, merge
from pytest_osworld.services.access import ServiceAccess
from pytest_osworld.services.pool import ServicePool
from pytest_osworld.settings import Settings
from pytest_osworld.setup.assets import AssetCache
from pytest_osworld.setup.context import TaskContext
from tests.support.paths import REPO

SERVERS = REPO / "pytest_osworld" / "servers"
_LISTENING = re.compile(r"^website: listening on 127\.0\.0\.1:(\d+)$")


def image_copy(folder: Path) -> Path:
    """A folder under ``folder`` that holds the servers' package as the desktop image does
    (``osworld_servers/``, what ``guest/build.py`` copies in), made on first use."""
    root = folder / "servers-image"
    if not root.exists():
        shutil.copytree(SERVERS, root / IMAGE_PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def server_process(module: str, folder: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """``subprocess`` arguments that run the server ``module`` as its container does (``python3 -m
    osworld_servers.<module>``, the package on ``PYTHONPATH``), with ``env``. Python starts without
    site-packages (``-S``) in ``folder``, so only the standard library and the package are in reach:
    never the host package, as in the image."""
    return {
        "args": [sys.executable, "-S", "-m", f"{IMAGE_PACKAGE}.{module}"],
        "cwd": folder,
        "env": {**env, "PYTHONPATH": str(image_copy(folder))},
    }


@contextmanager
def website_server() -> Iterator[str]:
    """The website service's server, run as its container runs it, in a process of its own; its base URL."""
    env = {**os.environ, "WEBSITE_PORT": "0", "WEBSITE_BIND": "127.0.0.1"}
    with tempfile.TemporaryDirectory(prefix="website-") as folder:
        proc = subprocess.Popen(
            **server_process("website", Path(folder), env), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()  # printed once it listens (or EOF if it died)
            found = _LISTENING.match(line)
            assert found, f"the website server did not start: {line!r} (exit {proc.poll()})"
            yield f"http://127.0.0.1:{found.group(1)}"
        finally:
            proc.terminate()
            proc.wait(timeout=10)


def services_context(tmp_path: Path, services: dict[str, ServiceAccess]) -> TaskContext:
    """A task's context for code that reads only services: its guest (port 9) is never reached."""
    settings = Settings(asset_cache=tmp_path / "assets")
    return TaskContext(
        guest=GuestClient("http://127.0.0.1:9"),
        url=lambda port: f"http://127.0.0.1:{port}",
        settings=settings,
        assets=AssetCache.from_settings(settings),
        cache_dir=tmp_path / "cache",
        services=services,
    )


def run_leftovers(engine: docker.DockerClient, run_id: str) -> tuple[list[str], list[str]]:
    """Names of the containers and networks labelled with ``run_id`` that are still there."""
    labels = {"label": [f"{LABEL_MANAGED}=1", f"{LABEL_RUN_ID}={run_id}"]}
    containers = [c.name for c in engine.containers.list(all=True, filters=labels)]
    networks = [n.name for n in engine.networks.list(filters=labels)]
    return containers, networks


def make_pool(run_id: str, entries: dict[str, object] | None = None, restarts: int = 1) -> ServicePool:
    host = parse_hosts([])[0]
    return ServicePool(
        merge(BUILTIN, entries or {}), host=host, owner=Owner(run_id=run_id), suffix="osworld.test", restarts=restarts
    )


def state_url(pool: ServicePool, cookie: str) -> str:
    base = pool.attach("echo").url(8000)
    assert base is not None
    return f"{base}/api/state?cookie={cookie}"
