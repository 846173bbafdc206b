"""What happened during a run under a fault, seen from outside it: a timeline of named moments.

Watchers note the moments a fault may be anchored to, for each task:

- ``container_create``: the engine created the task's sandbox (the sandbox is starting);
- ``guest_ready``: the sandbox's guest server answered for the first time (setup begins);
- ``model_request`` / ``done_answer``: the scripted model was asked, and handed out the last action
  (noted by :mod:`tests.support.faults.agent`);
- ``record_write``: a temporary file of the task's record appeared (its record is being written).

The injector waits on the timeline for its anchor; the checker and the benchmark read it afterwards.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import httpx
import requests.exceptions

from pytest_osworld.sandbox import LABEL_ROLE, LABEL_RUN_ID, LABEL_SERVICE, LABEL_TASK

_ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)
GUEST_PORT = 5000


@dataclass(frozen=True)
class Event:
    name: str
    task: str | None  # the task's run key, or a service's name for service events
    at: float  # time.time()
    detail: str = ""


class Timeline:
    """Events noted by several threads; :meth:`wait_for` blocks until one arrives."""

    def __init__(self) -> None:
        self._events: list[Event] = []
        self._changed = threading.Condition()

    def note(self, name: str, task: str | None = None, detail: str = "") -> Event:
        event = Event(name, task, time.time(), detail)
        with self._changed:
            self._events.append(event)
            self._changed.notify_all()
        return event

    def events(self, name: str | None = None, task: str | None = None) -> list[Event]:
        with self._changed:
            return [e for e in self._events if (name is None or e.name == name) and (task is None or e.task == task)]

    def first(self, name: str, task: str | None = None) -> Event | None:
        found = self.events(name, task)
        return found[0] if found else None

    def wait_for(self, name: str, task: str | None, stop: threading.Event, *, nth: int = 0) -> Event | None:
        """The ``nth`` event ``name`` of ``task`` (any task when None), once noted; None once ``stop`` is set."""
        with self._changed:
            while True:
                found = [e for e in self._events if e.name == name and (task is None or e.task == task)]
                if len(found) > nth:
                    return found[nth]
                if stop.is_set():
                    return None
                self._changed.wait(timeout=0.2)


class Watcher(threading.Thread):
    """A daemon thread that runs until :meth:`close`."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name, daemon=True)
        self.stopping = threading.Event()

    def close(self) -> None:
        self.stopping.set()
        self.join(timeout=10)


class EngineWatcher(Watcher):
    """The engine's container events of one run: sandboxes created and started (then their guest polled
    until it answers), services started; reconnects when the engine goes away and comes back."""

    def __init__(self, engine_url: str, run_id: str, timeline: Timeline) -> None:
        super().__init__("fault-engine-events")
        self.engine_url = engine_url
        self.run_id = run_id
        self.timeline = timeline
        self._stream: Any = None

    def run(self) -> None:
        since = time.time() - 1
        while not self.stopping.is_set():
            try:
                client = docker.DockerClient(base_url=self.engine_url, timeout=10)
            except _ENGINE_ERRORS:
                self.stopping.wait(0.2)  # the engine is away (restarting): poll for it
                continue
            try:
                self._stream = client.events(
                    since=int(since),
                    decode=True,
                    filters={"type": "container", "label": f"{LABEL_RUN_ID}={self.run_id}"},
                )
                for event in self._stream:
                    since = float(event.get("time", since))
                    self._on(client, event)
                    if self.stopping.is_set():
                        break
            except _ENGINE_ERRORS:
                self.stopping.wait(0.2)
            finally:
                client.close()

    def close(self) -> None:
        self.stopping.set()
        with contextlib.suppress(Exception):
            if self._stream is not None:
                self._stream.close()
        self.join(timeout=10)

    def _on(self, client: docker.DockerClient, event: dict[str, Any]) -> None:
        labels = event.get("Actor", {}).get("Attributes", {})
        action = event.get("Action") or event.get("status")
        if labels.get(LABEL_ROLE) == "service":
            if action == "start":
                self.timeline.note("service_start", labels.get(LABEL_SERVICE), event.get("id", ""))
            return
        task = labels.get(LABEL_TASK)
        if task is None or action not in ("create", "start", "die"):
            return
        if any(e.detail == event.get("id") for e in self.timeline.events(f"container_{action}", task)):
            return  # the same event again, read after a reconnection
        self.timeline.note(f"container_{action}", task, event.get("id", ""))
        if action == "start":
            threading.Thread(target=self._await_guest, args=(client, event["id"], task), daemon=True).start()

    def _await_guest(self, client: docker.DockerClient, container_id: str, task: str) -> None:
        """Poll the sandbox's guest server (its published port) until it first answers: setup begins."""
        try:
            ports = client.containers.get(container_id).ports.get(f"{GUEST_PORT}/tcp") or []
        except _ENGINE_ERRORS:
            return
        if not ports:
            return
        url = f"http://127.0.0.1:{ports[0]['HostPort']}/platform"
        deadline = time.monotonic() + 60
        with httpx.Client(trust_env=False) as http:
            while time.monotonic() < deadline and not self.stopping.is_set():
                try:
                    if http.get(url, timeout=1.0).status_code == 200:
                        self.timeline.note("guest_ready", task, container_id)
                        return
                except httpx.HTTPError:
                    pass
                time.sleep(0.02)  # poll interval of the readiness check


# --- a task's record being written, through inotify ----------------------------------------------

_IN_CREATE = 0x100
_IN_MOVED_TO = 0x80
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")


class _Inotify:
    def __init__(self) -> None:
        self._libc = ctypes.CDLL("libc.so.6", use_errno=True)
        self.fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")

    def watch(self, path: Path, mask: int) -> int:
        wd = int(self._libc.inotify_add_watch(self.fd, os.fsencode(path), mask))
        if wd < 0:
            raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
        return wd

    def read(self, timeout: float) -> Iterator[tuple[int, int, str]]:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return
        data = os.read(self.fd, 65536)
        offset = 0
        while offset < len(data):
            wd, mask, _, size = _EVENT.unpack_from(data, offset)
            name = data[offset + _EVENT.size : offset + _EVENT.size + size].rstrip(b"\0").decode(errors="replace")
            offset += _EVENT.size + size
            yield wd, mask, name

    def close(self) -> None:
        os.close(self.fd)


class RecordWatcher(Watcher):
    """Notes ``record_write`` when a temporary file of the task's record (``.result.json.*.tmp``,
    ``.result.txt.*.tmp``) appears in its folder: the record is being written, right now."""

    def __init__(self, task_dir: Path, task: str, timeline: Timeline) -> None:
        super().__init__("fault-record-watch")
        self.task_dir = task_dir
        self.task = task
        self.timeline = timeline

    def run(self) -> None:
        inotify = _Inotify()
        try:
            while not self.task_dir.is_dir():  # made when the task's first file is written
                if self.stopping.wait(0.01):
                    return
            with contextlib.suppress(OSError):
                inotify.watch(self.task_dir, _IN_CREATE | _IN_MOVED_TO)
            while not self.stopping.is_set():
                for _, _, name in inotify.read(0.2):
                    if name.startswith(".result.") and name.endswith(".tmp"):
                        self.timeline.note("record_write", self.task, name)
        finally:
            inotify.close()
