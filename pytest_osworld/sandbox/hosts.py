"""Environment hosts: the Docker engines sandboxes run on, and which xdist worker uses which.

``--osworld-docker-host URL[=capacity]`` is repeatable; without it the one host is the engine that
``DOCKER_HOST`` (or the local socket) names. Workers are spread over hosts by capacity with a smooth
weighted round robin over the worker index, so ``gw3`` always lands on the same host for the same
host list and no coordination between workers is needed.
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import urllib.parse
from dataclasses import dataclass
from typing import TYPE_CHECKING

import docker
import docker.errors
import requests.exceptions

from pytest_osworld.sandbox.base import SandboxConfigError

if TYPE_CHECKING:
    from pytest_osworld.settings import Settings

LOCAL_SOCKET = "unix:///var/run/docker.sock"
_SCHEMES = ("unix", "tcp", "ssh", "http", "https")


@dataclass(frozen=True)
class EngineHost:
    """One Docker engine. ``url`` None means: whatever ``DOCKER_HOST`` says, else the local socket."""

    url: str | None = None
    capacity: int = 1

    @property
    def effective_url(self) -> str:
        return self.url or os.environ.get("DOCKER_HOST") or LOCAL_SOCKET

    @property
    def display(self) -> str:
        """The URL without credentials: safe for messages and logs."""
        return redact(self.effective_url)

    @property
    def scheme(self) -> str:
        return urllib.parse.urlsplit(self.effective_url).scheme or "unix"

    @property
    def is_ssh(self) -> bool:
        return self.scheme == "ssh"

    def connect(self, timeout: float = 60.0) -> docker.DockerClient:
        """A client of this engine that has answered a ping, or :class:`SandboxConfigError`."""
        environment = dict(os.environ)
        environment["DOCKER_HOST"] = self.effective_url
        try:
            # from_env keeps DOCKER_TLS_VERIFY / DOCKER_CERT_PATH working for tcp:// hosts. ssh:// goes
            # through paramiko (not the ssh CLI): one connection per client, ~/.ssh/config honoured.
            client = docker.from_env(environment=environment, timeout=int(timeout), use_ssh_client=False)
            client.ping()
        except Exception as exc:  # noqa: BLE001 - paramiko, socket and requests errors all mean: no engine here
            raise SandboxConfigError(_no_engine(self, exc)) from None
        return client

    def publish_ip(self) -> str:
        """The address on the engine host that guest ports are published on.

        Loopback for the local socket and for ssh:// (reached through the SSH tunnel); for tcp:// the
        address the URL names, since only an address of that host can be reached from here.
        """
        if self.scheme in ("unix", "ssh", "npipe"):
            return "127.0.0.1"
        hostname = urllib.parse.urlsplit(self.effective_url).hostname or "127.0.0.1"
        try:
            return str(ipaddress.ip_address(hostname))
        except ValueError:
            try:
                return socket.gethostbyname(hostname)
            except OSError as exc:
                raise SandboxConfigError(
                    f"environment host {self.display}: cannot resolve {hostname} ({exc}); "
                    f"give its address in --osworld-docker-host"
                ) from None


def redact(url: str) -> str:
    """``ssh://user:secret@host`` -> ``ssh://user@host``; query strings are dropped (tokens live there)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if not parts.netloc:
        return f"{parts.scheme}://{parts.path}" if parts.scheme else parts.path
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None:
        netloc += f":{port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def parse_host(value: str) -> EngineHost:
    text = value.strip()
    url, capacity = text, 1
    head, sep, tail = text.rpartition("=")
    if sep and re.fullmatch(r"\d+", tail):
        url, capacity = head, int(tail)
    if capacity < 1:
        raise SandboxConfigError(f"--osworld-docker-host {redact(url)}={capacity}: capacity must be at least 1")
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise SandboxConfigError(
            f"--osworld-docker-host {redact(url)}: expected unix://, tcp:// or ssh:// URL, "
            f"optionally followed by =CAPACITY (e.g. ssh://root@envhost=8)"
        )
    return EngineHost(url=url, capacity=capacity)


def parse_hosts(values: list[str]) -> list[EngineHost]:
    return [parse_host(v) for v in values] if values else [EngineHost()]


def host_pool(settings: Settings) -> list[EngineHost]:
    """The environment hosts of a run (``--osworld-docker-host``), in the order given."""
    return parse_hosts(settings.sandbox.docker_host)


def worker_index(worker_id: str | None) -> int:
    """``gw3`` -> 3; a plain run is worker 0."""
    if not worker_id:
        return 0
    match = re.fullmatch(r"gw(\d+)", worker_id)
    return int(match.group(1)) if match else 0


def slots(hosts: list[EngineHost]) -> list[EngineHost]:
    """One round of host assignments, each host appearing ``capacity`` times, interleaved."""
    total = sum(h.capacity for h in hosts)
    current = [0] * len(hosts)
    order: list[EngineHost] = []
    for _ in range(total):
        for i, host in enumerate(hosts):
            current[i] += host.capacity
        best = max(range(len(hosts)), key=lambda i: (current[i], -i))
        current[best] -= total
        order.append(hosts[best])
    return order


def pick_host(hosts: list[EngineHost], worker_id: str | None) -> EngineHost:
    """The host of one worker: deterministic from its id, proportional to capacity."""
    round_ = slots(hosts)
    return round_[worker_index(worker_id) % len(round_)]


def _no_engine(host: EngineHost, exc: BaseException) -> str:
    detail = _short_reason(exc, host.effective_url)
    if host.is_ssh:
        fix = (
            "check that `ssh` to that host works with a key (agent, ~/.ssh/config IdentityFile), that the "
            "host key is in ~/.ssh/known_hosts, and that the docker CLI and dockerd are on that host"
        )
    elif host.scheme == "unix":
        fix = "start dockerd (e.g. `dockerd &`), or point DOCKER_HOST / --osworld-docker-host at an engine"
    else:
        fix = "check that the engine listens there and that DOCKER_TLS_VERIFY / DOCKER_CERT_PATH fit it"
    return f"no Docker engine answers at {host.display} ({detail}); fix: {fix}"


def _short_reason(exc: BaseException, url: str) -> str:
    if isinstance(exc, requests.exceptions.ConnectionError):
        return "connection refused or socket missing"
    if isinstance(exc, docker.errors.DockerException):
        text = str(exc).split("\n")[0]
    else:
        text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    # The engine URL may carry credentials; never echo an unredacted URL back.
    text = text.replace(url, redact(url))
    password = _password(url)
    if password:
        text = text.replace(password, "***")
    return text[:200]


def _password(url: str) -> str | None:
    try:
        return urllib.parse.urlsplit(url).password
    except ValueError:
        return None
