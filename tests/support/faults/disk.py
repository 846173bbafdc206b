"""The report folder's disk, made small (a tmpfs mounted here) so a fault can fill it and free it again."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

FILLER = ".disk-filler"  # at the disk's root, beside (never inside) the run folder


class Disk:
    """A mounted tmpfs: :meth:`fill` takes every free byte, :meth:`free` gives them back."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.full_at_end = False  # it was still full when the run's first session ended
        self._lock = threading.Lock()

    @property
    def filler(self) -> Path:
        return self.path / FILLER

    def fill(self) -> None:
        with self._lock:
            fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                chunk = b"\0" * (1 << 20)
                while True:  # megabytes, then smaller pieces down to a byte, until the disk refuses
                    try:
                        os.write(fd, chunk)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        if len(chunk) == 1:
                            return
                        chunk = chunk[: max(1, len(chunk) // 16)]
            finally:
                os.close(fd)

    def free(self) -> None:
        with self._lock:
            self.filler.unlink(missing_ok=True)

    @property
    def full(self) -> bool:
        return self.filler.exists()


@contextmanager
def small_disk(path: Path, size: str = "64m") -> Iterator[Disk]:
    """A tmpfs of ``size`` mounted at ``path`` (created) for the block; unmounted after it."""
    if os.geteuid() != 0:
        pytest.fail("the disk-full fault mounts a tmpfs: it needs root", pytrace=False)
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)], check=True)
    try:
        yield Disk(path)
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            subprocess.run(["umount", "--lazy", str(path)], check=True, capture_output=True)
