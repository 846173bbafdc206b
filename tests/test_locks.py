"""The machine's locks (``pytest_osworld/locks.py``) hold across processes whatever home each sees."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_osworld.locks import file_lock, locks_root

HOLDER = """
import sys
from pytest_osworld.locks import file_lock
with file_lock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_a_lock_held_by_a_process_with_another_home_makes_this_one_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytester runs (and CI jobs, containers) see a home of their own; an image build on the one engine
    # must still wait for another process's build.
    name = f"test-{secrets.token_hex(4)}"
    other_home = {"HOME": str(tmp_path / "other"), "XDG_CACHE_HOME": str(tmp_path / "other" / ".cache")}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, name],
        env={**os.environ, **other_home},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        monkeypatch.setenv("HOME", str(tmp_path / "this"))
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "this" / ".cache"))
        waited: list[str] = []

        def release_the_holder() -> None:
            waited.append(name)
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()

        with file_lock(name, on_wait=release_the_holder):
            pass
        assert waited == [name], "the lock was taken at once: the two processes did not share it"
    finally:
        holder.kill()
        holder.wait()
        (locks_root() / f"{name}.lock").unlink(missing_ok=True)
