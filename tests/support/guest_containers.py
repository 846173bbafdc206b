"""Real containers of the desktop image, as the guest server's tests drive them.

Every container is labelled as the project's, publishes its ports on 127.0.0.1 only (host ports
chosen by Docker and read back), and is removed by its owner whatever happened.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors
import httpx
import pytest

from tests.support.polling import poll_until, wait_for

GUEST_PORT = 5000
DEVTOOLS_PORT = 9222
VNC_PORT = 8006
READY_TIMEOUT_S = 90.0
LABELS = {"io.pytest-osworld.managed": "1", "io.pytest-osworld.test": "guest"}


@dataclass
class Guest:
    """One running desktop container and an HTTP client of its guest server."""

    container: docker.models.containers.Container
    ports: dict[int, int]  # container port -> host port on 127.0.0.1
    http: httpx.Client = field(init=False)

    def __post_init__(self) -> None:
        self.http = httpx.Client(base_url=self.url(GUEST_PORT), timeout=180.0)

    def url(self, container_port: int) -> str:
        return f"http://127.0.0.1:{self.ports[container_port]}"

    def execute(self, command: list[str] | str, shell: bool = False) -> dict[str, Any]:
        answer = self.http.post("/execute", json={"command": command, "shell": shell})
        assert answer.status_code == 200, answer.text
        result = answer.json()
        assert isinstance(result, dict)
        return result

    def run_ok(self, command: list[str] | str, shell: bool = False) -> str:
        result = self.execute(command, shell)
        assert result["returncode"] == 0, result
        output = result["output"]
        assert isinstance(output, str)
        return output

    def pyautogui(self, code: str) -> dict[str, Any]:
        """An action exactly as OSWorld's host sends it."""
        prefix = "import pyautogui; import time; pyautogui.FAILSAFE = False; "
        return self.execute(["python", "-c", prefix + code])

    def window_titles(self) -> list[str]:
        # A window that closes while wmctrl reads it (a splash screen) fails the listing: read again.
        def listing() -> dict[str, Any] | None:
            result = self.execute(["wmctrl", "-l"])
            return None if "BadWindow" in str(result.get("error", "")) else result

        result = wait_for(listing, "a window listing no window vanished from", timeout=10.0, every=0.1)
        assert result["returncode"] == 0, result
        lines = str(result["output"]).splitlines()
        return [line.split(None, 3)[3] if len(line.split(None, 3)) == 4 else "" for line in lines]

    def find_window(self, fragment: str, timeout: float) -> str | None:
        """The title of a window titled like ``fragment`` once there is one; None after ``timeout``."""
        return poll_until(
            lambda: next((t for t in self.window_titles() if fragment in t), None), bool, timeout, every=0.1
        )

    def wait_for_window(self, fragment: str, timeout: float = 60.0) -> str:
        title = self.find_window(fragment, timeout)
        if title is None:
            pytest.fail(f"timed out after {timeout:g} s waiting for a window titled like {fragment!r}")
        return title

    def screenshot(self) -> bytes:
        answer = self.http.get("/screenshot")
        assert answer.status_code == 200, answer.text
        return answer.content

    def close(self) -> None:
        self.http.close()
        with contextlib.suppress(docker.errors.NotFound):
            self.container.remove(force=True)


def start_guest(client: docker.DockerClient, image: str, environment: dict[str, str] | None = None) -> Guest:
    container = client.containers.run(
        image,
        detach=True,
        labels=LABELS,
        environment=environment or {},
        ports={f"{port}/tcp": ("127.0.0.1", None) for port in (GUEST_PORT, DEVTOOLS_PORT, VNC_PORT)},
    )
    try:
        container.reload()
        published = container.attrs["NetworkSettings"]["Ports"]
        ports = {port: int(published[f"{port}/tcp"][0]["HostPort"]) for port in (GUEST_PORT, DEVTOOLS_PORT, VNC_PORT)}
        guest = Guest(container, ports)
        wait_for(lambda: _screenshot_ready(guest), "the guest server", timeout=READY_TIMEOUT_S, every=0.1)
        return guest
    except BaseException:
        container.remove(force=True)
        raise


def _screenshot_ready(guest: Guest) -> bool:
    try:
        return guest.http.get("/screenshot", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False
