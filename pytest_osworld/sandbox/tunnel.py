"""Reaching guest ports of a sandbox on an ssh:// environment host.

The guest API runs any command it is sent and has no authentication, so its ports are published
on the environment host's loopback only and reached from here through the SSH connection the
engine is already reached by: one local listener on 127.0.0.1 (a port the kernel picks) per
published port, each accepted connection carried as a ``direct-tcpip`` channel. No port is
exposed on a network, none is guessed, and it works through a bastion (ProxyCommand) too.

The connection is configured like the Docker SDK's own (paramiko): ~/.ssh/config (HostName,
Port, User, IdentityFile, ProxyCommand), ~/.ssh/known_hosts, the SSH agent; unknown host keys are
refused. sshd on the host must allow TCP forwarding (its default).
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
import urllib.parse
from typing import Any

from pytest_osworld.errors import SandboxError
from pytest_osworld.sandbox.base import SandboxConfigError
from pytest_osworld.sandbox.hosts import redact

_BUFFER = 64 * 1024


def _paramiko() -> Any:
    try:
        import paramiko
    except ImportError:  # pragma: no cover - paramiko is a dependency
        raise SandboxConfigError(
            "ssh:// environment hosts need the paramiko package (fix: pip install paramiko)"
        ) from None
    return paramiko


class SshTunnels:
    """One SSH connection to an environment host, carrying any number of port forwards."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._display = redact(url)
        self._client: Any = None
        self._lock = threading.Lock()

    def _transport(self) -> Any:
        with self._lock:
            transport = self._client.get_transport() if self._client is not None else None
            if transport is None or not transport.is_active():
                self._client = self._connect()
                transport = self._client.get_transport()
            return transport

    def _connect(self) -> Any:
        paramiko = _paramiko()
        parts = urllib.parse.urlsplit(self._url)
        params: dict[str, Any] = {
            "hostname": parts.hostname,
            "port": parts.port or 22,
            "username": parts.username,
        }
        config_path = os.path.expanduser("~/.ssh/config")
        if os.path.exists(config_path):
            config = paramiko.SSHConfig.from_path(config_path).lookup(parts.hostname or "")
            if "proxycommand" in config:
                params["sock"] = paramiko.ProxyCommand(config["proxycommand"])
            params["hostname"] = config.get("hostname", params["hostname"])
            if parts.port is None and "port" in config:
                params["port"] = int(config["port"])
            if parts.username is None and "user" in config:
                params["username"] = config["user"]
            if "identityfile" in config:
                params["key_filename"] = config["identityfile"]
        client = paramiko.SSHClient()
        client.load_system_host_keys()
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(timeout=20, banner_timeout=20, auth_timeout=20, **params)
        except Exception as exc:  # noqa: BLE001 - paramiko's and the socket's errors all mean: no connection
            client.close()
            raise SandboxError(
                f"cannot open the SSH connection for guest ports to {self._display} "
                f"({type(exc).__name__}: {str(exc)[:160]})"
            ) from None
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(30)
        return client

    def forward(self, remote_port: int, remote_host: str = "127.0.0.1") -> Forward:
        """A local port on 127.0.0.1 whose connections reach ``remote_host:remote_port`` on the host."""
        self._transport()  # fail here, not on the first guest request, when SSH does not work
        return Forward(self, remote_host, remote_port)

    def open_channel(self, remote: tuple[str, int], origin: tuple[str, int]) -> Any:
        return self._transport().open_channel("direct-tcpip", remote, origin, timeout=10)

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None


class Forward:
    """A listener on 127.0.0.1 that carries each connection to one port on the SSH host."""

    def __init__(self, tunnels: SshTunnels, remote_host: str, remote_port: int) -> None:
        self._tunnels = tunnels
        self._remote = (remote_host, remote_port)
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.local_port: int = self._listener.getsockname()[1]
        self._closed = threading.Event()
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept_loop, name=f"ssh-forward-{self.local_port}", daemon=True).start()

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, peer = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._carry, args=(conn, peer), daemon=True).start()

    def _carry(self, conn: socket.socket, peer: tuple[str, int]) -> None:
        with self._lock:
            self._open.add(conn)
        channel = None
        try:
            try:
                channel = self._tunnels.open_channel(self._remote, peer)
            except Exception:  # noqa: BLE001 - whatever the SSH channel's error, nothing listens there (yet)
                return  # the client sees the connection close
            _pump(conn, channel, self._closed)
        finally:
            with self._lock:
                self._open.discard(conn)
            if channel is not None:
                channel.close()
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        with self._lock:
            for conn in list(self._open):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)


def _pump(conn: socket.socket, channel: Any, closed: threading.Event) -> None:
    while not closed.is_set():
        readable, _, _ = select.select([conn, channel], [], [], 1.0)
        if conn in readable:
            data = conn.recv(_BUFFER)
            if not data:
                return
            channel.sendall(data)
        if channel in readable:
            data = channel.recv(_BUFFER)
            if not data:
                return
            conn.sendall(data)
