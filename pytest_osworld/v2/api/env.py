"""The ``env`` a V2 task's ``evaluate(env)`` receives: the guest's controller and the task's setup
controller, cache folder, ports, action history and simulated user."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from pytest_osworld.guest.client import PYAUTOGUI_PREFIX, ExecResult, GuestClient
from pytest_osworld.setup.context import TaskContext
from pytest_osworld.v2.api.setup_controller import SetupController


def _answer(result: ExecResult) -> dict[str, Any]:
    return {"status": result.status, "output": result.output, "error": result.error, "returncode": result.returncode}


class VMController:
    """Upstream's python controller of the guest, over the project's guest client."""

    def __init__(self, guest: GuestClient) -> None:
        self.guest = guest

    def get_file(self, file_path: str) -> bytes | None:
        return self.guest.file(file_path)

    def get_screenshot(self) -> bytes:
        return self.guest.screenshot()

    def get_accessibility_tree(self) -> str | None:
        return self.guest.accessibility()

    def get_terminal_output(self) -> str | None:
        return self.guest.terminal()

    def execute_python_command(self, command: str) -> dict[str, Any]:
        """Python with pyautogui imported, as upstream's (the guest stops it after 120 s)."""
        return _answer(self.guest.execute(["python3", "-c", PYAUTOGUI_PREFIX + command]))

    def run_python_script(self, script: str) -> dict[str, Any]:
        return _answer(self.guest.execute(["python3", "-c", script]))

    def run_bash_script(self, script: str, timeout: int = 30, working_dir: str | None = None) -> dict[str, Any]:
        """A bash script in ``working_dir``; ``timeout`` seconds (the guest's own 120 s limit caps it).

        The script travels base64-encoded so no quoting of it can break the command line."""
        encoded = base64.b64encode(script.encode()).decode()
        cd = f'cd "$(eval echo {_quote(working_dir)})" && ' if working_dir else ""
        command = f"{cd}echo {encoded} | base64 -d > /tmp/.osworld_v2_script.sh && timeout {int(timeout)} bash /tmp/.osworld_v2_script.sh"
        return _answer(self.guest.execute(["bash", "-c", command]))


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@dataclass
class TaskEnv:
    """What upstream's ``DesktopEnv`` offers evaluators, for one task's sandbox."""

    context: TaskContext
    setup_controller: SetupController
    task_id: str
    user_simulator: Any = None
    enable_proxy: bool = False
    action_history: list[Any] = field(default_factory=list)
    is_environment_used: bool = True

    def __post_init__(self) -> None:
        self.controller = VMController(self.context.guest)

    @property
    def cache_dir(self) -> str:
        return str(self.context.cache_dir)

    @property
    def vm_ip(self) -> str:
        return self.setup_controller.vm_ip

    @property
    def server_port(self) -> int:
        return self.setup_controller.server_port

    @property
    def chromium_port(self) -> int:
        return self.setup_controller.chromium_port

    @property
    def vlc_port(self) -> int:
        return self.setup_controller.vlc_port
