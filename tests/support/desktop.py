"""Real containers of the project's desktop image for the runtime and controller tests.

Ports are published on 127.0.0.1 with host ports chosen by Docker and read back; every container
carries the test labels and is removed when its fixture ends. Readiness is polled on /screenshot.
"""

from __future__ import annotations

import contextlib
import http.server
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from pytest_osworld.guest.client import GuestClient
from pytest_osworld.sandbox.base import API_PORT, GUEST_PORTS

LABELS = {"io.pytest-osworld.managed": "1", "io.pytest-osworld.test": "runtime"}
READY_S = 180.0


def desktop_image(client: Any) -> str:
    from pytest_osworld.guest.build import ensure_image

    return ensure_image(client).reference


@dataclass
class Desktop:
    container: Any
    ports: dict[int, int]
    clients: list[GuestClient] = field(default_factory=list)

    def url(self, guest_port: int = API_PORT) -> str:
        return f"http://127.0.0.1:{self.ports[guest_port]}"

    def client(self, **kwargs: Any) -> GuestClient:
        made = GuestClient(self.url(API_PORT), **kwargs)
        self.clients.append(made)
        return made

    def sh(self, script: str) -> str:
        """Run a shell script as the desktop user through the engine (a check beside the guest API)."""
        code, output = self.container.exec_run(["bash", "-lc", script], user="user")
        text: str = output.decode("utf-8", "replace")
        assert code == 0, f"{script!r} exited {code}: {text}"
        return text

    def read_ports(self) -> None:
        self.container.reload()
        bound = self.container.attrs["NetworkSettings"]["Ports"] or {}
        self.ports = {
            int(spec.split("/")[0]): int(binding[0]["HostPort"]) for spec, binding in bound.items() if binding
        }

    def wait_ready(self, timeout: float = READY_S) -> None:
        deadline = time.monotonic() + timeout
        problem = "no answer"
        while time.monotonic() < deadline:
            self.container.reload()
            if self.container.status not in ("created", "running"):
                logs = self.container.logs(tail=40).decode("utf-8", "replace")
                raise AssertionError(f"desktop container exited ({self.container.status}):\n{logs}")
            try:
                self.read_ports()
                if httpx.get(self.url() + "/screenshot", timeout=10).status_code == 200:
                    return
            except (httpx.HTTPError, KeyError) as exc:
                problem = str(exc)
            time.sleep(0.25)  # readiness poll
        raise AssertionError(f"desktop not ready within {timeout:g} s: {problem}")

    def stop(self) -> None:
        for made in self.clients:
            made.close()
        with contextlib.suppress(Exception):
            self.container.remove(force=True)


def start_desktop(client: Any, image: str, env: dict[str, str] | None = None) -> Desktop:
    container = client.containers.run(
        image,
        detach=True,
        labels=LABELS,
        ports={f"{port}/tcp": ("127.0.0.1", None) for port in GUEST_PORTS},
        environment=env or {},
        shm_size="512m",
    )
    desktop = Desktop(container, {})
    try:
        desktop.wait_ready()
    except BaseException:
        desktop.stop()
        raise
    return desktop


@contextlib.contextmanager
def desktop(client: Any, image: str, env: dict[str, str] | None = None) -> Iterator[Desktop]:
    made = start_desktop(client, image, env)
    try:
        yield made
    finally:
        made.stop()


def bridge_gateway(made: Desktop) -> str:
    """The host's address on the container's network: what the container reaches the host through."""
    made.container.reload()
    networks = made.container.attrs["NetworkSettings"]["Networks"]
    gateway: str = next(n["Gateway"] for n in networks.values() if n.get("Gateway"))
    return gateway


class _Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep test output clean
        pass


@dataclass
class FileServer:
    """A real HTTP server on the host serving ``root``, reachable from containers and from loopback."""

    root: Path
    host: str
    server: http.server.ThreadingHTTPServer
    hits: list[str] = field(default_factory=list)

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    def url(self, name: str, host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}/{name}"


@contextlib.contextmanager
def file_server(root: Path, bind: str) -> Iterator[FileServer]:
    hits: list[str] = []

    class Handler(_Handler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def do_GET(self) -> None:
            hits.append(self.path)
            super().do_GET()

    server = http.server.ThreadingHTTPServer((bind, 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield FileServer(root, bind, server, hits)
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port
