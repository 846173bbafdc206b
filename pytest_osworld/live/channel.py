"""The files between the processes of a run and the one that serves its live page.

A run's channel is a folder the serving process makes (the xdist controller, or the plain pytest
process) and hands to the workers. Each process appends its events, one JSON object a line, to a file
of its own (``events-<worker>.jsonl``: no two writers share a file), and puts each running task's last
screenshot beside it. The server tails the files. The other way, the server marks a task a person sent
input to (``touched/``) before it lets the input through; the task's episode reads the mark at its end.

Files, not a socket: a worker never waits on the server, and a server that is slow or gone costs a
worker nothing but a line appended to a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_osworld.record import HumanInput

EVENTS_GLOB = "events-*.jsonl"
SHOTS = "shots"
TOUCHED = "touched"


def file_key(key: str) -> str:
    """A file name for a run key (``os/abc#r2`` has a slash and a hash)."""
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def _replace(path: Path, data: bytes) -> None:
    """Write by rename: a reader sees the old file or the new one, never half of one. No fsync: the
    reader is on this machine, and nothing here must outlive the run."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


class Channel:
    def __init__(self, root: Path) -> None:
        self.root = root

    def make(self) -> Channel:
        (self.root / SHOTS).mkdir(parents=True, exist_ok=True)
        (self.root / TOUCHED).mkdir(parents=True, exist_ok=True)
        return self

    # --- the publishing side (every process that runs tasks)

    def publisher(self, worker: str) -> Publisher:
        return Publisher(self, worker)

    def shot_path(self, key: str) -> Path:
        return self.root / SHOTS / f"{file_key(key)}.png"

    def human_input(self, key: str) -> HumanInput | None:
        """The mark the server left for a task a person sent input to, or None."""
        path = self.root / TOUCHED / f"{file_key(key)}.json"
        try:
            return HumanInput.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            # A mark that cannot be read is still a mark: the input went through.
            return HumanInput(first_at="unknown", last_at="unknown", messages=1)

    # --- the serving side

    def mark_input(self, key: str, mark: HumanInput) -> None:
        """Mark a task as touched by a person; done before the input is let through."""
        _replace(self.root / TOUCHED / f"{file_key(key)}.json", mark.model_dump_json().encode())

    def tail(self) -> Tail:
        return Tail(self.root)


class Publisher:
    """One process's events. Thread-safe; a failed write is dropped (the page is a view, never the record)."""

    def __init__(self, channel: Channel, worker: str) -> None:
        self.channel = channel
        self.worker = worker
        self._lock = threading.Lock()
        self._file = open(channel.root / f"events-{worker}.jsonl", "a", encoding="utf-8")  # noqa: SIM115 - held open

    def publish(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"kind": kind, "worker": self.worker, **fields}, separators=(",", ":")) + "\n"
        with self._lock:
            if self._file.closed:
                return
            try:
                self._file.write(line)
                self._file.flush()
            except (OSError, ValueError):
                pass

    def screenshot(self, key: str, png: bytes) -> bool:
        try:
            _replace(self.channel.shot_path(key), png)
        except OSError:
            return False
        return True

    def close(self) -> None:
        with self._lock:
            self._file.close()


class Tail:
    """Reads what the publishers appended since the last call: whole lines only (a line being written
    stays for the next call)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._offsets: dict[Path, int] = {}

    def read(self) -> Iterator[dict[str, Any]]:
        for path in sorted(self.root.glob(EVENTS_GLOB)):
            offset = self._offsets.get(path, 0)
            try:
                with path.open("rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except OSError:
                continue
            end = data.rfind(b"\n") + 1
            if not end:
                continue
            self._offsets[path] = offset + end
            for line in data[:end].splitlines():
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    yield event
