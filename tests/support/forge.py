"""The forge server on this machine's python, as its container runs it (``python3 -m osworld_servers.forge``):
the ``forge_server`` fixture, shared by the forge's tests (tests/services) and the GitLab helpers' tests
(tests/v2); a plugin loaded by tests/conftest.py."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.services import server_process


@dataclass
class Forge:
    url: str
    token: str
    home: Path  # HOME of the git commands the tests run (no user configuration)
    data: Path  # the forge's FORGE_DATA (its repositories on disk)

    def api(self, method: str, path: str, *, token: str | None = "", **kwargs: Any) -> httpx.Response:
        """A call of ``/api/v4<path>`` with the token (``token=None``: none; another string: that one)."""
        headers = {} if token is None else {"PRIVATE-TOKEN": token or self.token}
        return httpx.request(method, f"{self.url}/api/v4{path}", headers=headers, trust_env=False, timeout=30, **kwargs)

    def reset(self) -> None:
        answer = httpx.post(f"{self.url}/api/reset", headers={"PRIVATE-TOKEN": self.token}, trust_env=False, timeout=60)
        assert answer.status_code == 200 and answer.json() == {"reset": True}

    def repo_url(self, path: str, *, token: str | None = None) -> str:
        host = self.url.removeprefix("http://")
        return f"http://oauth2:{token}@{host}/{path}.git" if token else f"http://{host}/{path}.git"

    def git(self, *args: str, cwd: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": "Tester",
            "GIT_AUTHOR_EMAIL": "tester@example.com",
            "GIT_COMMITTER_NAME": "Tester",
            "GIT_COMMITTER_EMAIL": "tester@example.com",
        }
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)
        if check:
            assert done.returncode == 0, f"git {' '.join(args)}: {done.stderr}"
        return done


def _serving_port(log: Path, process: subprocess.Popen[bytes], deadline: float) -> int:
    """The port the server prints once its seed is in place; fails when it exits or stays silent."""
    while time.monotonic() < deadline:
        found = re.search(r"serving on port (\d+)", log.read_text())
        if found:
            return int(found.group(1))
        if process.poll() is not None:
            pytest.fail(f"the forge exited {process.returncode}: {log.read_text()}")
        time.sleep(0.05)
    pytest.fail(f"the forge did not start within 30 s: {log.read_text()}")


@pytest.fixture(scope="module")
def forge_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Forge]:
    """The server as the container runs it (``python3 -m osworld_servers.forge``), on a free loopback port."""
    folder = tmp_path_factory.mktemp("forge")
    token = secrets.token_hex(16)
    env = {
        "PATH": os.environ["PATH"],
        "FORGE_TOKEN": token,
        "FORGE_PORT": "0",
        "FORGE_HOST": "127.0.0.1",
        "FORGE_DATA": str(folder / "data"),
    }
    log = folder / "forge.log"
    with log.open("wb") as out:
        process = subprocess.Popen(**server_process("forge", folder, env), stderr=out)
    try:
        port = _serving_port(log, process, time.monotonic() + 30)
        home = folder / "home"
        home.mkdir()
        yield Forge(url=f"http://127.0.0.1:{port}", token=token, home=home, data=folder / "data")
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert token not in log.read_text()  # the forge never prints its token
