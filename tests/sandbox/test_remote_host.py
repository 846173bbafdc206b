"""An ssh:// environment host: the engine reached over SSH, guest ports through the SSH tunnel.

The "remote" host is this machine through an sshd of the test's own, listening on 127.0.0.1 only,
with a throwaway key pair; the Docker SDK talks to it with paramiko.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

from tests.sandbox import support
from tests.sandbox.sessions import GUEST_TESTS

pytestmark = pytest.mark.docker

SSHD = "/usr/sbin/sshd"


@dataclass
class Sshd:
    port: int
    key: Path
    host_public_key: str

    def write_client_config(self, home: Path) -> None:
        ssh_dir = home / ".ssh"
        ssh_dir.mkdir(mode=0o700, exist_ok=True)
        (ssh_dir / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {self.host_public_key}\n")
        (ssh_dir / "config").write_text(f"Host 127.0.0.1\n  IdentityFile {self.key}\n")


def ensure_sshd() -> None:
    if Path(SSHD).exists():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail("openssh-server is needed for the ssh:// host test (apt-get install openssh-server)")
    subprocess.run(
        ["apt-get", "install", "-y", "--no-install-recommends", "openssh-server"],
        check=True,
        stdout=subprocess.DEVNULL,
        timeout=600,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    ensure_sshd()
    folder = tmp_path_factory.mktemp("sshd")
    for name in ("host_key", "client_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "authorized_keys").write_text((folder / "client_key.pub").read_text())
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege separation folder
    for _attempt in range(5):
        port = free_port()
        config = folder / "sshd_config"
        config.write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host_key'}\nPidFile {folder / 'sshd.pid'}\n"
            f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPermitRootLogin prohibit-password\n"
            "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n"
            "AllowTcpForwarding yes\n"
        )
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and process.poll() is None:
            with socket.socket() as attempt:
                if attempt.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        if process.poll() is None:
            break
    else:
        pytest.fail(f"sshd did not start: {process.stderr.read().decode() if process.stderr else ''}")
    host_public = " ".join((folder / "host_key.pub").read_text().split()[:2])
    yield Sshd(port=port, key=folder / "client_key", host_public_key=host_public)
    process.terminate()
    process.wait(timeout=10)


def test_fixture_tests_pass_on_an_ssh_host(
    osworld_pytester: pytest.Pytester,
    sshd: Sshd,
    engine: docker.DockerClient,
    run_id: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sshd.write_client_config(osworld_pytester.path)  # pytester runs with HOME set to its folder
    monkeypatch.setenv("DOCKER_HOST", f"ssh://root@127.0.0.1:{sshd.port}")
    body = (
        GUEST_TESTS
        + """
import os, docker

def tunnelled(sandbox):
    # The URL is a local forward, not the port the engine published on the host's loopback.
    attrs = docker.from_env().containers.get(sandbox.container_id).attrs
    published = int(attrs["NetworkSettings"]["Ports"]["5000/tcp"][0]["HostPort"])
    local = int(sandbox.api_url.rsplit(":", 1)[1])
    assert os.environ["DOCKER_HOST"].startswith("ssh://")
    assert local != published
    assert sandbox.describe()["host"].startswith("ssh://root@127.0.0.1:")
"""
    )
    for i in range(4):
        body += f"\ndef test_remote_{i}(osworld_sandbox):\n    check(osworld_sandbox)\n    tunnelled(osworld_sandbox)\n"
    osworld_pytester.makepyfile(test_remote=body)
    result = osworld_pytester.runpytest_subprocess("-p", "xdist", "-n", "2", f"--osworld-run-id={run_id}")
    result.assert_outcomes(passed=4)
    assert support.run_containers(engine, run_id) == []


def test_several_hosts_by_capacity(
    osworld_pytester: pytest.Pytester, sshd: Sshd, engine: docker.DockerClient, run_id: str
) -> None:
    """Two environment hosts (the local socket and the ssh one): workers land on both, by capacity."""
    sshd.write_client_config(osworld_pytester.path)
    body = (
        GUEST_TESTS
        + """
import os

def test_where(osworld_sandbox, worker_id):
    check(osworld_sandbox)
    expected = "ssh://" if worker_id in ("gw1",) else "unix://"
    assert osworld_sandbox.describe()["host"].startswith(expected), (worker_id, osworld_sandbox.describe())

def test_where_again(osworld_sandbox, worker_id):
    test_where(osworld_sandbox, worker_id)
"""
    )
    osworld_pytester.makepyfile(test_hosts=body)
    result = osworld_pytester.runpytest_subprocess(
        "-p",
        "xdist",
        "-n",
        "3",
        f"--osworld-run-id={run_id}",
        "--osworld-docker-host=unix:///var/run/docker.sock=2",
        f"--osworld-docker-host=ssh://root@127.0.0.1:{sshd.port}=1",
    )
    result.assert_outcomes(passed=2)
    assert support.run_containers(engine, run_id) == []
