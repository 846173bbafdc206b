"""VS Code: run a command from its palette, then read the file it writes."""

from __future__ import annotations

import time
from typing import Any

from pytest_osworld.setup.context import TaskContext

from ._registry import getter
from .file import fetch_vm_file

PALETTE_SETTLE_S = 1.0  # upstream's pause before reading the file the command wrote
# With the project's readiness waits (eval_settle quiet), a file not there after upstream's pause is
# waited for this much longer: a loaded host's extension host can take seconds to run the command,
# where upstream's VM takes under one. A fixed eval_settle (compat) reads once, as upstream.
PALETTE_FILE_LIMIT_S = 15.0
POLL_INTERVAL_S = 0.25


@getter("vscode_config")
def get_vscode_config(ctx: TaskContext, config: dict[str, Any]) -> str | None:
    command = config["vscode_extension_command"]
    for code in (
        "pyautogui.hotkey('ctrl', 'shift', 'p')",
        f"pyautogui.typewrite({command!r})",
        "pyautogui.press('enter')",
    ):
        ctx.guest.run_pyautogui(code)
    time.sleep(PALETTE_SETTLE_S)  # the command writes its file asynchronously; upstream waits this long
    found = fetch_vm_file(ctx, config["path"], config["dest"])
    if ctx.settings.loop.eval_settle != "quiet":
        return found
    deadline = time.monotonic() + PALETTE_FILE_LIMIT_S
    while found is None and time.monotonic() < deadline:
        time.sleep(POLL_INTERVAL_S)
        found = fetch_vm_file(ctx, config["path"], config["dest"])
    return found
