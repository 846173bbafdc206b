"""This process as a driver of the Ray cluster: one connection per process, shared by its users.

A pytest process (an xdist worker, the controller, a plain run) connects once; the provider and
the run's cluster side (``cluster.RunCluster``) each hold the connection, and the last to let go
disconnects. A run's node agents are named in the run's own namespace (``pytest-osworld-<run id>``),
always given where they are made and looked up, so one connection serves any run. Ray is an optional extra: without it the error says how to install it.

Two things Ray's ``init`` does that a pytest process must not keep: it takes SIGTERM over (the
plugin turns SIGTERM into the same teardown as Ctrl-C, so the previous handler is put back), and
it replaces a loopback address by this machine's network address, which a cluster listening on
127.0.0.1 only (a test cluster) does not answer on (for such an address, ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER``
is set to 0 before Ray is imported, Ray's own switch for a cluster that is this machine alone).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import signal
import socket
import sys
import threading
import urllib.parse
from types import ModuleType
from typing import Any

from pytest_osworld.sandbox.base import SandboxConfigError

RAY_MISSING = "the ray sandbox needs Ray, an optional extra: pip install 'pytest-osworld[ray]'"
NAMESPACE_PREFIX = "pytest-osworld-"
_LOCAL_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"

_lock = threading.Lock()
_holders = 0


def namespace_of(run_id: str) -> str:
    return NAMESPACE_PREFIX + run_id


def host_of(address: str) -> str | None:
    """The host part of a Ray address (``HOST:PORT``, ``ray://HOST:PORT``); None for ``auto``."""
    if address in ("auto", "", "local"):
        return None
    parts = urllib.parse.urlsplit(address if "://" in address else f"gcs://{address}")
    return parts.hostname


def is_loopback(address: str) -> bool:
    host = host_of(address)
    if host is None:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def import_ray(address: str = "auto") -> ModuleType:
    """The ``ray`` module, imported for a cluster at ``address``; :class:`SandboxConfigError` without it."""
    if is_loopback(address) and "ray" not in sys.modules:
        os.environ.setdefault(_LOCAL_CLUSTER_SWITCH, "0")
    try:
        import ray
    except ImportError:
        raise SandboxConfigError(RAY_MISSING) from None
    module: ModuleType = ray
    return module


def connect(address: str, namespace: str | None) -> ModuleType:
    """Connect this process (once; ``namespace`` is its default one, None: Ray's anonymous one);
    returns ``ray``. Each call is one hold that :func:`release` lets go of."""
    global _holders
    ray = import_ray(address)
    with _lock:
        if not ray.is_initialized():
            _init(ray, address, namespace)
        _holders += 1
    return ray


def _reachable(address: str) -> None:
    """Fail fast on an address nothing listens at (Ray itself retries for minutes)."""
    host = host_of(address)
    if host is None:
        return
    port = urllib.parse.urlsplit(address if "://" in address else f"gcs://{address}").port
    if port is None:
        return
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise SandboxConfigError(
            f"no Ray cluster answers at {address} ({exc.strerror or type(exc).__name__}); start one "
            f"(ray start --head --resources '{{\"osworld_sandbox\": 4}}') or fix --osworld-ray-address"
        ) from None


def _init(ray: ModuleType, address: str, namespace: str | None) -> None:
    _reachable(address)
    main = threading.current_thread() is threading.main_thread()
    previous: Any = signal.getsignal(signal.SIGTERM) if main else None
    try:
        ray.init(
            address=address,
            namespace=namespace,
            logging_level=logging.WARNING,
            log_to_driver=False,  # node agents' own output stays in the cluster's logs
        )
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as exc:
        raise SandboxConfigError(
            f"no Ray cluster answers at {address} ({type(exc).__name__}: {str(exc).splitlines()[0][:200]}); "
            f"start one (ray start --head --resources '{{\"osworld_sandbox\": 4}}') or fix --osworld-ray-address"
        ) from None
    finally:
        if main and previous is not None:
            signal.signal(signal.SIGTERM, previous)  # Ray's own handler would exit without the teardown


def release() -> None:
    """Let go of one hold; the last one disconnects."""
    global _holders
    with _lock:
        _holders = max(0, _holders - 1)
        if _holders:
            return
        ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


def driver_address(ray: ModuleType, address: str) -> str:
    """The address this driver reaches the nodes from (what node agents let through to a sandbox).

    Through Ray Client the driver is no node: the address of this machine on the way to the head.
    """
    if address.startswith("ray://"):
        host = host_of(address) or "127.0.0.1"
        port = urllib.parse.urlsplit(address).port or 10001
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, port))  # no packet is sent: it only picks the route
            return str(probe.getsockname()[0])
    return str(ray.util.get_node_ip_address())
