"""A Docker engine of the fault matrix's own, beside the shared one, to be restarted under a run.

The suite runs in parallel on the engine that ``.ci/setup`` started, with long-lived containers: that
engine is never restarted. The engine-restart fault gets a second ``dockerd`` instead, started here
with everything of its own: a data root (kept between sessions: it holds a copy of the desktop image),
an exec root (its own managed containerd), a pid file, a Unix socket and a bridge made with ``ip link``.
``--iptables=false --ip6tables=false`` keep it away from the first engine's chains; a sandbox's ports
are still published on 127.0.0.1, through docker-proxy. The desktop image is copied in once per machine
(``docker save | docker load`` through the SDK) and found again by its image id.

One session at a time uses it (a file lock); it is stopped when that session is done with it.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors
import pytest
import requests.exceptions

from pytest_osworld.guest import build

BRIDGE = "pyosw-fault0"  # at most 15 characters (a Linux interface name)
# Candidate subnets for the bridge and for networks the engine makes; the first not routed here is taken.
_BRIDGE_SUBNETS = ("10.213.0.0/24", "10.223.0.0/24", "172.30.213.0/24")
_ENGINE_ERRORS = (docker.errors.DockerException, requests.exceptions.RequestException)


def _cache_root() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "pytest-osworld" / "fault-engine"


@dataclass(frozen=True)
class Layout:
    """Where the engine keeps its state: the data root (kept), the run-time files (not kept)."""

    root: Path = field(default_factory=_cache_root)
    runtime: Path = Path("/run/pytest-osworld-fault-engine")

    @property
    def data_root(self) -> Path:
        return self.root / "data"

    @property
    def lock(self) -> Path:
        return self.root / "engine.lock"

    @property
    def log(self) -> Path:
        return self.root / "dockerd.log"

    @property
    def pidfile(self) -> Path:
        return self.runtime / "dockerd.pid"

    @property
    def socket(self) -> Path:
        return self.runtime / "docker.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"


def _routed() -> list[ipaddress.IPv4Network]:
    out = subprocess.run(["ip", "-4", "route"], capture_output=True, text=True, check=True).stdout
    nets = []
    for line in out.splitlines():
        first = line.split()[0] if line.split() else ""
        if "/" in first or first.count(".") == 3:
            try:
                nets.append(ipaddress.IPv4Network(first, strict=False))
            except ValueError:
                continue
    return nets


SHARED_BRIDGE = "docker0"  # the shared engine's default bridge: the one name moby ever deletes


def shared_bridge() -> list[str] | None:
    """The addresses of the host's docker0, or None when it is not there."""
    shown = subprocess.run(["ip", "-o", "-4", "addr", "show", "dev", SHARED_BRIDGE], capture_output=True, text=True)
    if shown.returncode != 0:
        return None
    return [line.split()[3] for line in shown.stdout.splitlines() if len(line.split()) > 3]


def _keep_shared_bridge(before: list[str] | None) -> None:
    """docker0 vanished while this engine started: put back as it was, and the session fails (this
    engine must never touch the shared one's network)."""
    if before is None or shared_bridge() is not None:
        return
    subprocess.run(["ip", "link", "add", SHARED_BRIDGE, "type", "bridge"], capture_output=True, check=False)
    for address in before:
        subprocess.run(["ip", "addr", "add", address, "dev", SHARED_BRIDGE], capture_output=True, check=False)
    subprocess.run(["ip", "link", "set", SHARED_BRIDGE, "up"], capture_output=True, check=False)
    pytest.fail(f"starting the fault engine removed the host's {SHARED_BRIDGE} (put back)", pytrace=False)


def _free(candidates: tuple[str, ...], routed: list[ipaddress.IPv4Network], skip: str | None = None) -> str:
    for text in candidates:
        net = ipaddress.IPv4Network(text)
        if text != skip and not any(net.overlaps(r) for r in routed):
            return text
    pytest.fail(f"no free subnet among {candidates} for the fault matrix's own Docker engine", pytrace=False)


class OwnEngine:
    """A second ``dockerd``: :meth:`start`, :meth:`restart` (under a run), :meth:`stop`; its data kept."""

    def __init__(self, layout: Layout | None = None) -> None:
        self.layout = layout or Layout()
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts: list[tuple[float, float]] = []  # (went down, answered again), time.time()
        self._args: list[str] = []

    @property
    def url(self) -> str:
        return self.layout.url

    def client(self, timeout: int = 60) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=timeout)

    # --- life ------------------------------------------------------------------------------------

    def start(self) -> None:
        if shutil.which("dockerd") is None or os.geteuid() != 0:
            pytest.fail(
                "the engine-restart fault starts a dockerd of its own: it needs dockerd and root", pytrace=False
            )
        self.layout.data_root.mkdir(parents=True, exist_ok=True)
        self.layout.runtime.mkdir(parents=True, exist_ok=True)
        self._stop_stale()
        self._bridge(_routed())
        # Never --default-address-pool (nor --bridge=none): with either, a restarting dockerd deletes the
        # host's docker0 (moby's removeDefaultBridgeInterface), the shared engine's bridge.
        self._args = [
            "dockerd",
            f"--data-root={self.layout.data_root}",
            f"--exec-root={self.layout.runtime / 'exec'}",
            f"--pidfile={self.layout.pidfile}",
            f"--host={self.url}",
            f"--bridge={BRIDGE}",
            "--iptables=false",
            "--ip6tables=false",
            "--ip-masq=false",
            "--cgroup-parent=/pytest-osworld-fault-engine",
        ]
        self._launch()

    def _launch(self) -> None:
        before = shared_bridge()
        with self.layout.log.open("ab") as log:
            self.process = subprocess.Popen(self._args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self._await_answer(60.0)
        _keep_shared_bridge(before)

    def _await_answer(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        while True:
            try:
                client = self.client(timeout=5)
                client.ping()
                client.close()
                return
            except _ENGINE_ERRORS:
                if self.process is not None and self.process.poll() is not None:
                    pytest.fail(f"the fault engine's dockerd exited; see {self.layout.log}", pytrace=False)
                if time.monotonic() > deadline:
                    pytest.fail(f"the fault engine did not answer in {limit:g} s; see {self.layout.log}")
                time.sleep(0.1)  # poll interval of the readiness check

    def _halt(self, limit: float = 60.0) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None

    def down(self) -> None:
        """Stop the engine (its containers stop with it); :meth:`up` starts it again."""
        self._halt()

    def up(self) -> None:
        self._launch()

    def restart(self) -> tuple[float, float]:
        """Stop the engine (its containers stop with it: no live restore) and start it again; returns
        when it went down and when it answered again (``time.time()``)."""
        down = time.time()
        self._halt()
        self._launch()
        window = (down, time.time())
        self.restarts.append(window)
        return window

    def stop(self) -> None:
        """Stop the engine and remove its bridge; the data root (the image) stays for the next session."""
        self._halt()
        subprocess.run(["ip", "link", "delete", BRIDGE], capture_output=True, check=False)

    def _stop_stale(self) -> None:
        """A dockerd of an earlier session that died without stopping its engine: stopped first."""
        try:
            pid = int(self.layout.pidfile.read_text().strip())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except (OSError, ValueError):
            return
        if "dockerd" in cmdline and str(self.layout.data_root) in cmdline:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 60
            while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
                time.sleep(0.1)  # poll for its end

    def _bridge(self, routed: list[ipaddress.IPv4Network]) -> str:
        shown = subprocess.run(["ip", "-4", "-o", "addr", "show", "dev", BRIDGE], capture_output=True, text=True)
        if shown.returncode == 0 and " inet " in shown.stdout:
            return str(ipaddress.IPv4Interface(shown.stdout.split(" inet ")[1].split()[0]).network)
        subnet = _free(_BRIDGE_SUBNETS, routed)
        gateway = next(ipaddress.IPv4Network(subnet).hosts())
        for command in (
            ["ip", "link", "add", BRIDGE, "type", "bridge"],
            ["ip", "addr", "add", f"{gateway}/{subnet.split('/')[1]}", "dev", BRIDGE],
            ["ip", "link", "set", BRIDGE, "up"],
        ):
            subprocess.run(command, capture_output=True, text=True, check=True)
        return subnet

    # --- the desktop image -----------------------------------------------------------------------

    def ensure_desktop_image(self, shared: docker.DockerClient) -> tuple[str, float]:
        """The shared engine's current desktop image, present here under the same tags (copied once,
        found again by its id); returns its id and the seconds the copy took (0 when it was here)."""
        info = build.ensure_image(shared)
        own = self.client(timeout=900)
        started = time.monotonic()
        try:
            try:
                own.images.get(info.id)
                copied = 0.0
            except docker.errors.ImageNotFound:
                own.images.load(shared.images.get(info.id).save(named=info.reference))
                copied = time.monotonic() - started
            for tag in info.tags:
                repository, _, name = tag.rpartition(":")
                own.api.tag(info.id, repository, name)
            for image in own.images.list(name=build.IMAGE_REPOSITORY):
                if image.id != info.id:  # an older copy: only the current one is kept
                    own.images.remove(image.id, force=True)
        finally:
            own.close()
        return info.id, copied


@contextmanager
def own_engine(layout: Layout | None = None) -> Iterator[OwnEngine]:
    """The matrix's own engine, started under a lock (one session at a time) and stopped at the end."""
    engine = OwnEngine(layout)
    engine.layout.root.mkdir(parents=True, exist_ok=True)
    with engine.layout.lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, also when the process dies
        try:
            engine.start()
            yield engine
        finally:
            engine.stop()
