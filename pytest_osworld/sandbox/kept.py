"""Sandboxes kept after a failed or masked task, for a look (``--osworld-keep-failed N``).

A kept sandbox is a container of the run like any other, found and removed by the run's labels at
the run's end. Docker cannot change a container's labels once it exists, so what marks it as kept is
its name: ``<name>--kept-failed-score-0`` or ``<name>--kept-masked-sandbox_lost`` (``docker ps`` and
``pytest-osworld sandboxes`` show why), and a process's own sweep on its way out leaves such a
container to the run's end (``leftovers.sweep_run``).

How many are kept is counted across the run's processes (xdist workers) in one ledger file in the
run folder (:class:`KeepLedger`, read and written under ``flock``): a slot is taken and the container
renamed while the lock is held, so no two workers keep the N+1st. Entries of an earlier session in
the same folder (a resume) belong to another owner and do not count.

:func:`wait_for_enter` is the wait of ``--osworld-keep-failed-until-exit`` at the run's end.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import select
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from pytest_osworld.procs import own_identity
from pytest_osworld.sandbox.base import SandboxConfigError
from pytest_osworld.sandbox.labels import Owner

KEPT_MARK = "--kept-"  # between a container's own name and why it was kept
LEDGER = "kept_sandboxes.json"  # in the run folder
TASK_CHARS = 80  # of the task's key in a kept container's name, at most
_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")
_UNSAFE_DETAIL = re.compile(r"[^a-zA-Z0-9_.+]")  # no "-": it ends the detail in a name
_REPEAT = re.compile(r"\.r(\d+)$")
_MARKED = re.compile(
    re.escape(KEPT_MARK) + r"(?:failed-score-(?P<score>[^-]+)|masked-(?P<reason>[^-]+))(?:--(?P<task>.+))?$"
)

KeptStatus = Literal["failed", "masked"]


class KeepFailedError(SandboxConfigError):
    """``--osworld-keep-failed`` cannot work as asked (the sandbox's provider cannot keep its sandboxes,
    or an option needs another); raised before any sandbox starts."""


@dataclass(frozen=True)
class KeptWhy:
    """Why a sandbox was kept: its task failed with a score, or was masked with a reason."""

    status: KeptStatus
    detail: str  # the score as text (``0``, ``0.5``), or the mask's reason (``sandbox_lost``)

    @property
    def text(self) -> str:
        return f"failed with score {self.detail}" if self.status == "failed" else f"masked ({self.detail})"

    def mark(self, key: str) -> str:
        """What goes after the name of a kept container of task ``key``:
        ``--kept-failed-score-0--os.a1b2``, ``--kept-masked-setup_error--chrome.x.r2`` (a sandbox from a
        warm pool has no task in its labels, so the name carries it too)."""
        detail = _UNSAFE_DETAIL.sub("_", self.detail.replace("-", "m"))  # a negative score, an exponent
        why = f"failed-score-{detail}" if self.status == "failed" else f"masked-{detail}"
        return f"{KEPT_MARK}{why}--{_task_slug(key)}"


def _task_slug(key: str) -> str:
    """A task's key as container names may hold it: ``domain/id#rK`` -> ``domain.id.rK``, other characters
    a name cannot hold as ``_``, at most :data:`TASK_CHARS` of it."""
    return _UNSAFE.sub("_", key.replace("/", ".", 1).replace("#r", ".r"))[:TASK_CHARS]


def is_kept(name: str) -> bool:
    return KEPT_MARK in name


@dataclass(frozen=True)
class KeptName:
    """What a kept container's name says: why, and its task's key as far as a name can hold it."""

    why: str
    task: str | None


def read_kept_name(name: str) -> KeptName | None:
    """Why the container of ``name`` was kept, and its task; None for a container that was not."""
    found = _MARKED.search(name.lstrip("/"))
    if found is None:
        return KeptName("kept", None) if is_kept(name) else None
    if found["score"] is not None:
        why = KeptWhy("failed", found["score"].replace("m", "-")).text
    else:
        why = KeptWhy("masked", found["reason"]).text
    task = found["task"]
    if task:
        task = _REPEAT.sub(r"#r\1", task.replace(".", "/", 1))
    return KeptName(why, task or None)


class KeptSandbox(BaseModel):
    """One kept sandbox, as the ledger holds it."""

    key: str  # the task's run key (domain/id, or domain/id#rK)
    name: str  # the container's name once kept
    why: str  # KeptWhy.text
    worker: str | None = None
    api: str | None = None  # the guest API as the process that kept it reached it
    vnc: str | None = None  # host:port of its VNC server, as that process reached it
    kept_at: float = 0.0  # epoch seconds

    def line(self) -> str:
        where = [f"container {self.name}"]
        if self.vnc:
            where.append(f"live view vnc://{self.vnc}")
        if self.api:
            where.append(f"api {self.api}")
        return f"{self.key} ({self.why}): {', '.join(where)}"


def owner_token(owner: Owner) -> str:
    """Who a ledger's entries belong to: the process that owns the run, by pid and start identity."""
    if owner.run_pid is None:
        return f"{os.getpid()}:{own_identity()}"
    return f"{owner.run_pid}:{owner.run_process_start or '?'}"


class KeepLedger:
    """The run's kept sandboxes, at most ``limit`` of them, shared by the run's processes."""

    def __init__(self, run_dir: Path, owner: Owner, limit: int) -> None:
        self.path = Path(run_dir) / LEDGER
        self.token = owner_token(owner)
        self.limit = limit

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        """The ledger, read and written back under an exclusive flock (this session's entries only)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                data = _parse(handle.read())
                if data.get("owner") != self.token:
                    data = {"owner": self.token, "limit": self.limit, "kept": []}
                before = json.dumps(data, sort_keys=True)
                yield data
                if json.dumps(data, sort_keys=True) != before:
                    handle.seek(0)
                    handle.truncate()
                    handle.write(json.dumps(data, indent=2) + "\n")
                    handle.flush()
                    os.fsync(handle.fileno())
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def reserve(self, keep: Callable[[], KeptSandbox]) -> KeptSandbox | None:
        """Take a slot and run ``keep`` (which marks the sandbox kept) while holding the lock; None when
        ``limit`` sandboxes are kept already. An error of ``keep`` takes no slot."""
        with self._locked() as data:
            if len(data["kept"]) >= self.limit:
                return None
            entry = keep()
            data["kept"].append(entry.model_dump(mode="json"))
            return entry

    def entries(self) -> list[KeptSandbox]:
        """This session's kept sandboxes (none when the ledger is missing or another session's)."""
        if not self.path.is_file():
            return []
        with self._locked() as data:
            found = []
            for raw in data["kept"]:
                with contextlib.suppress(ValidationError):
                    found.append(KeptSandbox.model_validate(raw))
            return found


def _parse(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return {}
    if not isinstance(value, dict) or not isinstance(value.get("kept"), list):
        return {}
    return value


WaitEnd = Literal["enter", "timeout", "closed"]


def wait_for_enter(fd: int, timeout: float) -> WaitEnd:
    """Wait until a line is read from ``fd`` (Enter on a terminal), it closes, or ``timeout`` seconds pass.

    Ctrl-C raises KeyboardInterrupt as usual: the caller decides what it means.
    """
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return "timeout"
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            continue
        data = os.read(fd, 4096)
        if not data:
            return "closed"
        if b"\n" in data or b"\r" in data:
            return "enter"
