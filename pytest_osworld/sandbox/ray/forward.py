"""A sandbox's guest ports, reachable across the cluster through its node agent.

The sandbox's container publishes its guest ports on its node's loopback only (as on a local
engine). The node agent listens for each of them on the node's cluster address, at a port the
kernel picks, and relays a connection to the loopback port only when it comes from an address the
agent lets through: the driver that claimed the sandbox (the machine that runs pytest). Any other
peer is closed at once. When the agent ends (the run's end, a lost node) its listeners end with it,
so a guest on a lost node stops answering its driver, as it would on a machine that is gone.
"""

from __future__ import annotations

import contextlib
import logging
import selectors
import socket
import threading

log = logging.getLogger("pytest_osworld.sandbox.ray")

_CHUNK = 64 * 1024


class Forwarder:
    """Listeners on ``bind_ip`` relaying to ``targets`` (guest port -> (host, port) on this node)."""

    def __init__(self, bind_ip: str, targets: dict[int, tuple[str, int]], allow: set[str] | None = None) -> None:
        self.bind_ip = bind_ip
        self._allow: set[str] = set(allow or ())
        self._lock = threading.Lock()
        self._closed = False
        self._open: set[socket.socket] = set()
        self._listeners: dict[int, socket.socket] = {}
        self.addresses: dict[int, tuple[str, int]] = {}
        try:
            for guest_port, target in targets.items():
                listener = socket.create_server((bind_ip, 0), backlog=64)
                self._listeners[guest_port] = listener
                self.addresses[guest_port] = (bind_ip, int(listener.getsockname()[1]))
                threading.Thread(
                    target=self._accept, args=(listener, target), name=f"forward {guest_port}", daemon=True
                ).start()
        except OSError:
            self.close()
            raise

    def allow(self, peers: set[str]) -> None:
        """Let connections from ``peers`` through from now on (in place of those before)."""
        with self._lock:
            self._allow = set(peers)

    def _allowed(self, peer: str) -> bool:
        with self._lock:
            return peer in self._allow

    def _accept(self, listener: socket.socket, target: tuple[str, int]) -> None:
        while True:
            try:
                client, (peer, *_rest) = listener.accept()
            except OSError:
                return  # closed
            if not self._allowed(peer):
                log.warning("refused a connection from %s to a guest port: only the claiming driver may connect", peer)
                client.close()
                continue
            threading.Thread(target=self._relay, args=(client, target), name="forward relay", daemon=True).start()

    def _relay(self, client: socket.socket, target: tuple[str, int]) -> None:
        try:
            upstream = socket.create_connection(target, timeout=10)
        except OSError:
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            if self._closed:
                client.close()
                upstream.close()
                return
            self._open.update((client, upstream))
        peers = {client: upstream, upstream: client}
        try:
            with selectors.DefaultSelector() as selector:
                for sock in peers:
                    selector.register(sock, selectors.EVENT_READ)
                open_ends = 2
                while open_ends:
                    for key, _ in selector.select():
                        source: socket.socket = key.fileobj  # type: ignore[assignment]
                        data = source.recv(_CHUNK)
                        if not data:
                            selector.unregister(source)
                            open_ends -= 1
                            with contextlib.suppress(OSError):
                                peers[source].shutdown(socket.SHUT_WR)
                            continue
                        peers[source].sendall(data)
        except OSError:
            pass  # either end went away
        finally:
            with self._lock:
                self._open.difference_update((client, upstream))
            client.close()
            upstream.close()

    def close(self) -> None:
        """Stop listening and cut every relayed connection."""
        with self._lock:
            self._closed = True
            sockets = [*self._listeners.values(), *self._open]
            self._open.clear()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
