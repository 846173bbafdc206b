"""Task-hash pins of an OSWorld-V2 release: each task file's SHA-256, checked before the task runs.

Two shapes are read:

- a ``files`` mapping, as the E2B port's ``task-hashes.json``: ``{"files": {"task_001.py": {"sha256":
  "...", "size": 1234}, ...}, "source_revision": "...", "repository": "...", ...}``;
- a flat mapping of task file names, as a ``benchmark_releases/<release>.task_hashes.json`` may hold it:
  ``{"task_001.py": "<sha256>", ...}`` (upstream's exact layout is not public; other keys are metadata).

A digest may be written ``<hex>`` or ``sha256:<hex>``, as a string or an object's ``sha256``. Keys are
matched by file name (a key ``task_class/task_001.py`` pins ``task_001.py``). The release is the file's
``release`` key, else the ``<release>`` of its name ``<release>.task_hashes.json``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_osworld.errors import OsworldError

RELEASE_SUFFIX = ".task_hashes.json"
_HEX = re.compile(r"^[0-9a-fA-F]{64}$")


class PinError(OsworldError):
    """A hash file that cannot be read, or a task file that does not match its pin."""


@dataclass(frozen=True)
class TaskPins:
    """The pins of one hash file: task file name -> SHA-256 (lowercase hex)."""

    source: Path
    hashes: dict[str, str]
    release: str | None = None
    revision: str | None = None  # the tasks' source revision, when the file gives it
    file_sha256: str | None = None  # of the hash file itself

    def problem(self, task_file: Path) -> str | None:
        """Why ``task_file`` does not match its pin (a message with the fix), or None when it matches."""
        expected = self.hashes.get(task_file.name)
        release = f" (release {self.release})" if self.release else ""
        if expected is None:
            return (
                f"{task_file}: not pinned: {self.source}{release} has no hash for {task_file.name}; give the "
                "hash file of the release this task comes from, or leave --osworld-v2-hashes out to run it unpinned"
            )
        actual = sha256_file(task_file)
        if actual != expected:
            return (
                f"{task_file}: SHA-256 {actual} differs from the pinned {expected} in {self.source}{release}; the "
                "task file is not the release's: download the release's task files again, or give the hash file "
                "of the release these files come from"
            )
        return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _digest(value: Any, where: str) -> str:
    raw = value.get("sha256") if isinstance(value, dict) else value
    text = raw.removeprefix("sha256:") if isinstance(raw, str) else None
    if text is None or not _HEX.match(text):
        raise PinError(
            f"{where}: expected a SHA-256 (64 hex digits, or sha256:<hex>, or an object with sha256), got {raw!r}; "
            "fix the hash file"
        )
    return text.lower()


def read_pins(path: Path) -> TaskPins:
    """Read a hash file of either shape; every problem names the file and the key."""
    try:
        data = path.read_bytes()
        value = json.loads(data)
    except OSError as exc:
        raise PinError(f"{path}: cannot read the hash file: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise PinError(f"{path}: not a JSON hash file: {exc}") from None
    if not isinstance(value, dict):
        raise PinError(f"{path}: expected a JSON object of task file hashes, got {type(value).__name__}")
    if "files" in value:
        files = value["files"]
        if not isinstance(files, dict):
            raise PinError(f"{path}: 'files' must map task file names to their SHA-256")
        prefix = "files."
    else:
        files = {k: v for k, v in value.items() if k.endswith(".py")}
        prefix = ""
    hashes: dict[str, str] = {}
    for key, entry in files.items():
        name = PurePosixPath(key).name
        digest = _digest(entry, f"{path}: {prefix}{key}")
        if hashes.get(name, digest) != digest:
            raise PinError(f"{path}: two different hashes for {name}; keep one entry per task file")
        hashes[name] = digest
    if not hashes:
        raise PinError(
            f'{path}: no task file hashes found; expected {{"files": {{"task_001.py": {{"sha256": ...}}}}}} '
            'or {"task_001.py": "<sha256>", ...}'
        )
    release = value.get("release")
    if not isinstance(release, str) or not release:
        release = path.name.removesuffix(RELEASE_SUFFIX) if path.name.endswith(RELEASE_SUFFIX) else None
    revision = value.get("source_revision", value.get("revision"))
    return TaskPins(
        source=path,
        hashes=hashes,
        release=release,
        revision=revision if isinstance(revision, str) else None,
        file_sha256=hashlib.sha256(data).hexdigest(),
    )
