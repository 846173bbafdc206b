"""pytest sessions of the sandbox tests run as processes of their own: each holds its sandboxes until a
signal or a kill comes (the interrupt, leftover and warm-pool tests), and ``pytest-osworld cleanup``
run after them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# A user's test of a sandbox, as the pytester runs write it: the guest answers and shows a screen.
GUEST_TESTS = """
import httpx

def check(sandbox):
    assert sandbox.alive()
    answer = httpx.get(sandbox.api_url + "/platform", trust_env=False, timeout=60)
    assert answer.status_code == 200 and answer.text == "Linux", answer.text
    shot = httpx.get(sandbox.api_url + "/screenshot", trust_env=False, timeout=60)
    assert shot.status_code == 200 and shot.content[:4] == b"\\x89PNG"
"""

HOLDING_TEST = """
import os, pathlib, time

def test_hold(osworld_sandbox):
    marker = pathlib.Path(os.environ["HOLDING_DIR"]) / f"{os.getpid()}"
    marker.write_text(osworld_sandbox.container_id)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # held until the signal comes
        time.sleep(0.1)
"""


def start_session(
    pytester: pytest.Pytester, run_id: str, *extra: str, tests: int = 1
) -> tuple[subprocess.Popen[bytes], Path]:
    body = HOLDING_TEST + "".join(
        f"\ndef test_hold_{i}(osworld_sandbox):\n    test_hold(osworld_sandbox)\n" for i in range(1, tests)
    )
    pytester.makepyfile(test_holding=body)
    holding = pytester.path / "holding"
    holding.mkdir()
    env = {**os.environ, "HOLDING_DIR": str(holding)}
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--osworld-run-id={run_id}", *extra],
        cwd=pytester.path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, like a terminal's foreground job
    )
    return process, holding


def wait_holding(process: subprocess.Popen[bytes], holding: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        markers = list(holding.iterdir())
        if len(markers) >= count:
            return [m.read_text() for m in markers]
        if process.poll() is not None:
            output = process.stdout.read().decode() if process.stdout else ""
            pytest.fail(f"the session ended before holding its sandboxes:\n{output}")
        time.sleep(0.1)
    process.kill()
    pytest.fail("no sandbox was held within 180 s")


def finish(process: subprocess.Popen[bytes]) -> tuple[int, str]:
    try:
        output, _ = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"the session did not end after the signal:\n{output.decode()}")
    return process.returncode, output.decode()


def cleanup(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_osworld.cli", "cleanup", *args], capture_output=True, text=True, timeout=120
    )
