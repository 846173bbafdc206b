"""The machine's locks, shared by its processes (xdist workers, parallel runs), over ``fcntl.flock``:

- ``file_lock`` and ``engine_lock``: one holder at a time (an image built once per engine, a run's
  services started once);
- ``FairLock``: first come, first served, for exclusive services. ``flock`` alone is not fair (a
  releasing worker may take it straight back while others starve), so the holders queue in a file:
  each waiter appends a ticket (its pid and process start identity), the head of the queue holds the
  lock. The queue file is only ever read and written under ``flock``. A ticket whose process has died
  (a worker killed hard) is dropped by the next waiter that looks, so a crash never blocks the others.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from pytest_osworld.procs import is_alive, own_identity

_FIRST_POLL = 0.02
_MAX_POLL = 0.25


def locks_root() -> Path:
    """The folder of the machine's locks: the temporary folder's ``pytest-osworld-<uid>/locks``.

    Not under ``HOME``: processes of one machine that see different homes (pytest's ``pytester`` runs
    set their own, so do containers and CI jobs) must still take turns on one engine's image build.
    """
    path = Path(tempfile.gettempdir()) / f"pytest-osworld-{os.getuid()}" / "locks"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def file_lock(name: str, on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold ``<locks_root>/<name>.lock``; ``on_wait`` runs if another holds it."""
    path = locks_root() / f"{name}.lock"
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def engine_lock(engine: str, what: str) -> contextlib.AbstractContextManager[None]:
    """The lock of ``what`` on one Docker engine (named by its display URL), shared by every process
    of this machine: xdist workers and parallel runs take turns. Processes on other machines sharing a
    remote engine are not covered."""
    return file_lock(f"{what}-{hashlib.sha256(engine.encode()).hexdigest()[:16]}")


def lock_dir(run_id: str) -> Path:
    """Where a run's service locks live: one folder per run, removed when the run ends."""
    digest = hashlib.sha256(run_id.encode()).hexdigest()[:16]
    path = locks_root() / f"services-{digest}"
    path.mkdir(parents=True, exist_ok=True)
    return path


@dataclass(frozen=True)
class Held:
    """A turn at the lock: how long the wait was."""

    waited_seconds: float


class FairLock:
    """A FIFO lock over a queue file; ``hold()`` waits for this process's turn."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def _queue(self) -> Iterator[list[dict[str, str]]]:
        """The queue, read and written back under an exclusive flock of the file."""
        with open(self.path, "a+", encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                text = handle.read()
                queue: list[dict[str, str]] = json.loads(text) if text.strip() else []
                before = list(queue)
                yield queue
                if queue != before:
                    handle.seek(0)
                    handle.truncate()
                    handle.write(json.dumps(queue))
                    handle.flush()
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def hold(self, on_wait: Callable[[], None] | None = None) -> Iterator[Held]:
        ticket = {"id": secrets.token_hex(8), "pid": str(os.getpid()), "start": own_identity()}
        begun = time.monotonic()
        with self._queue() as queue:
            queue.append(ticket)
        try:
            delay = _FIRST_POLL
            told = False
            while True:
                with self._queue() as queue:
                    # A dead process's ticket would block the queue for ever: drop it.
                    queue[:] = [t for t in queue if t["id"] == ticket["id"] or is_alive(t["pid"], t["start"])]
                    if queue and queue[0]["id"] == ticket["id"]:
                        break
                if not told and on_wait is not None:
                    on_wait()
                    told = True
                time.sleep(delay)
                delay = min(delay * 1.5, _MAX_POLL)
            yield Held(waited_seconds=round(time.monotonic() - begun, 3))
        finally:
            with self._queue() as queue:
                queue[:] = [t for t in queue if t["id"] != ticket["id"]]
