"""Who owns a sandbox: a process on a host, told apart from a later process that got the same pid."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def hostname() -> str:
    return socket.gethostname()


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "?"


def process_identity(pid: int) -> str | None:
    """``<boot id>:<start time>`` of a live process on this host, None when there is none.

    The start time (clock ticks since boot, field 22 of /proc/PID/stat) differs between two
    processes that had the same pid, and the boot id between two boots.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its closing one.
    fields = stat[stat.rfind(")") + 2 :].split()
    if len(fields) < 20 or fields[0] == "Z":  # a zombie has ended
        return None
    return f"{_boot_id()}:{fields[19]}"


def is_alive(pid_label: str | None, identity_label: str | None) -> bool:
    """Whether the process a container's labels name still runs on this host."""
    try:
        pid = int(pid_label or "")
    except ValueError:
        return False
    identity = process_identity(pid)
    if identity is None:
        return False
    # Older containers carry no identity: the pid alone is all there is to go by.
    return identity_label in (None, "", identity)


def own_identity() -> str:
    return process_identity(os.getpid()) or "?"
